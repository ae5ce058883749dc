import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../api-keys/api-auth.hook.js';
import { withIdempotency } from '../idempotency/idempotency.hook.js';
import { providerFailureError } from '../providers/provider-failure.js';
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
import { agentRead, agentToCall, createCall, getCall, listCalls, type CallsDeps } from './calls.service.js';

/** The scope of an Idempotency-Key within an API key on the endpoint that creates calls. */
export const createCallRoute = 'POST /v1/calls';

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
      // A body that breaks the schema still meets the Idempotency-Key rules first (withIdempotency).
      attachValidation: true,
      config: { patternHints: createCallPatternHints },
    },
    async (request, reply) => {
      const apiKey = requireApiKey(request);
      // The agent (and the suppression list) is read with the key's claim: no round trip of its own.
      const read = request.validationError ? undefined : agentRead(apiKey, request.body);
      return withIdempotency(
        deps,
        createCallRoute,
        request,
        reply,
        async (hold, rows) => {
          const result = await createCall(deps, apiKey, request.body, hold, agentToCall(rows));
          switch (result.kind) {
            case 'invalid_metadata':
              throw new ApiError('invalid_request', result.message, { param: 'metadata' });
            case 'agent_not_found':
              throw new ApiError('agent_not_found', `No agent ${JSON.stringify(request.body.agent_id).slice(0, 140)} in this account.`, {
                param: 'agent_id',
              });
            case 'number_suppressed':
              throw new ApiError(
                'number_suppressed',
                `${request.body.to} is on this account's suppression list, so it is not called. Do not retry; if the person asked to be called again, remove it first (DELETE /v1/suppressions/${encodeURIComponent(request.body.to)}).`,
                {
                  param: 'to',
                },
              );
            case 'provider_failed':
              throw providerFailureError(result.failure);
            case 'concurrency_limit_exceeded':
              throw new ApiError(
                'concurrency_limit_exceeded',
                `This account has ${result.inProgress} ${apiKey.mode} call${result.inProgress === 1 ? '' : 's'} in progress and a limit of ${result.limit} (max_concurrent_calls); no call was placed. Retry after Retry-After seconds (with the same Idempotency-Key), once a call has ended, or ask your callgate operator to raise the limit.`,
                { retryAfterSeconds: result.retryAfterSeconds },
              );
            case 'store_pending':
              throw new ApiError(
                'database_unavailable',
                hold === undefined
                  ? `The call ${result.callId} was placed, but the database is unavailable for a moment; it is stored as soon as it is back. Do not retry without an Idempotency-Key: that would place a second call. Look for the call with GET /v1/calls/${result.callId}.`
                  : `The call ${result.callId} was placed, but the database is unavailable for a moment; it is stored as soon as it is back. Retry with backoff and the same Idempotency-Key to get its 201 (never a second call).`,
                { cause: result.cause, retryAfterSeconds: 2 },
              );
            case 'created':
              return reply
                .code(result.response.status as 201)
                .headers(result.response.headers)
                .send(result.response.body as CallCreated);
          }
        },
        read,
      );
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
    const apiKey = requireApiKey(request);
    const limit = parseListLimit(request.query.limit);
    const { starting_after: startingAfter, status, agent_id: agentId } = request.query;
    // An empty filter is a mistake, not "no filter" (Stripe refuses empty strings the same way).
    if (agentId === '')
      throw new ApiError('invalid_request', "agent_id must not be empty; leave it out to list every agent's calls.", { param: 'agent_id' });
    const page = await listCalls(deps.db, apiKey.account_id, {
      mode: apiKey.mode,
      limit,
      ...(startingAfter === undefined ? {} : { startingAfter }),
      ...(status === undefined ? {} : { status }),
      ...(agentId === undefined ? {} : { agentId }),
    });
    if (!page) throw new ApiError('invalid_request', 'starting_after is not a call of this account.', { param: 'starting_after' });
    return page;
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
  app.get('/calls/:id', { schema: retrieveSchema }, async (request) => {
    const apiKey = requireApiKey(request);
    const call = await getCall(deps.db, apiKey.account_id, request.params.id, apiKey.mode);
    if (!call) {
      const id = request.params.id;
      throw new ApiError(
        'not_found',
        id === '' ? 'A call id is needed: GET /v1/calls/{id}.' : `No ${apiKey.mode}-mode call ${id} in this account.`,
      );
    }
    return call;
  });
  registerMethodNotAllowed(app, '/calls/:id', ['GET']);
};
