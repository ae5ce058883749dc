import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import {
  Call,
  CallCreated,
  CallList,
  CallParams,
  CreateCallBody,
  CreateCallHeaders,
  ListCallsQuery,
  createCallPatternHints,
} from './calls.schemas.js';
import { createCall, listCallsOfKey, retrieveCall, type CallsDeps } from './calls.service.js';

export const callsRoutes: FastifyPluginAsyncTypebox<{ deps: CallsDeps }> = async (app, { deps }) => {
  app.post(
    '/calls',
    {
      schema: {
        operationId: 'createCall',
        tags: ['Calls'],
        summary: 'Start an outbound call',
        description:
          'Places one call with the agent to the number; its outcome comes later as a call.completed or call.failed webhook (and in GET /v1/calls/{id}). Send an Idempotency-Key to retry safely: a retry with the same key and body answers the first 201 again, with Idempotent-Replayed: true, and places no second call.',
        headers: CreateCallHeaders,
        body: CreateCallBody,
        response: {
          201: CallCreated,
          ...errorResponses(
            [
              'invalid_idempotency_key',
              'agent_not_found',
              'number_suppressed',
              'idempotency_conflict',
              'concurrency_limit_exceeded',
              'provider_error',
              'provider_unavailable',
              'provider_timeout',
            ],
            { body: true },
          ),
        },
      },
      config: { idempotency: true, patternHints: createCallPatternHints },
    },
    async (request, reply) => {
      const created = await createCall(deps, requireApiKey(request), request.body, request.idempotencyKey);
      return reply
        .code(201)
        .headers(created.headers)
        .send(created.body as CallCreated);
    },
  );

  const listSchema = {
    operationId: 'listCalls',
    tags: ['Calls'],
    summary: 'List calls',
    description: "The key's calls of its mode, newest first, a page at a time: pass the last id as starting_after for the next page.",
    querystring: ListCallsQuery,
    response: { 200: CallList, ...errorResponses([]) },
  };
  app.get('/calls', { schema: listSchema }, async (request) => {
    const { starting_after: startingAfter, status, agent_id: agentId } = request.query;
    return listCallsOfKey(deps.db, requireApiKey(request), {
      limit: parseListLimit(request.query.limit),
      ...(startingAfter === undefined ? {} : { startingAfter }),
      ...(status === undefined ? {} : { status }),
      ...(agentId === undefined ? {} : { agentId }),
    });
  });
  registerMethodNotAllowed(app, '/calls', ['GET', 'POST']);

  const retrieveSchema = {
    operationId: 'retrieveCall',
    tags: ['Calls'],
    summary: 'Retrieve a call',
    description: 'The call with its outcome once it ended (status completed or failed).',
    params: CallParams,
    response: { 200: Call, ...errorResponses(['not_found']) },
  };
  app.get('/calls/:id', { schema: retrieveSchema }, async (request) => retrieveCall(deps.db, requireApiKey(request), request.params.id));
  registerMethodNotAllowed(app, '/calls/:id', ['GET']);
};
