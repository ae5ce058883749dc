import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import { parseQueryDateTime, parseQueryPhoneNumber } from '../../http/query-values.js';
import {
  Call,
  CallCreated,
  CallList,
  CallParams,
  CallTranscript,
  CreateCallBody,
  CreateCallHeaders,
  ListCallsQuery,
  createCallPatternHints,
} from './calls.schemas.js';
import { createCall, listCallsOfKey, retrieveCall, type CallPageQuery, type CallsDeps } from './calls.service.js';
import { openRecording, readTranscript } from './call-content.service.js';
import { sendRecording } from './recording-reply.js';
import { cancelCall } from './call-cancel.service.js';

/** GET /v1/calls's query as the service takes it: the limit, the number and the times parsed (each a 400 naming it). */
function callPageQueryOf(query: ListCallsQuery): Omit<CallPageQuery, 'mode'> {
  const { starting_after: startingAfter, status, agent_id: agentId, batch_id: batchId, reference } = query;
  return {
    limit: parseListLimit(query.limit),
    ...(startingAfter === undefined ? {} : { startingAfter }),
    ...(status === undefined ? {} : { status }),
    ...(agentId === undefined ? {} : { agentId }),
    ...(query.to === undefined ? {} : { to: parseQueryPhoneNumber(query.to, 'to') }),
    ...(batchId === undefined ? {} : { batchId }),
    ...(reference === undefined ? {} : { reference }),
    ...(query.created_after === undefined ? {} : { createdAfter: parseQueryDateTime(query.created_after, 'created_after') }),
    ...(query.created_before === undefined ? {} : { createdBefore: parseQueryDateTime(query.created_before, 'created_before') }),
  };
}

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
    description:
      "The key's calls of its mode, newest first, a page at a time: pass the last id as starting_after for the next page. The filters combine (a call must match each one given); created_after and created_before are exclusive bounds.",
    querystring: ListCallsQuery,
    response: { 200: CallList, ...errorResponses([]) },
  };
  app.get('/calls', { schema: listSchema }, async (request) =>
    listCallsOfKey(deps.db, requireApiKey(request), callPageQueryOf(request.query)),
  );
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

  const scopeOf = (request: FastifyRequest) => {
    const apiKey = requireApiKey(request);
    return { accountId: apiKey.account_id, mode: apiKey.mode };
  };
  const transcriptSchema = {
    operationId: 'getCallTranscript',
    tags: ['Calls'],
    summary: "Read a call's transcript",
    description:
      'The conversation of an ended call, turn by turn, in order, as its provider transcribed it (system and tool messages left out). Empty when the provider kept none, or once the retention period the operator set has passed.',
    params: CallParams,
    response: { 200: CallTranscript, ...errorResponses(['not_found', 'call_not_ended']) },
  };
  app.get('/calls/:id/transcript', { schema: transcriptSchema, config: { logResponseBody: false } }, async (request) =>
    readTranscript(deps.db, scopeOf(request), request.params.id),
  );
  registerMethodNotAllowed(app, '/calls/:id/transcript', ['GET']);

  const recordingSchema = {
    operationId: 'getCallRecording',
    tags: ['Calls'],
    summary: "Download a call's recording",
    description:
      "The audio of an ended call, streamed from its voice provider with this server's credentials, in the provider's format (audio/mpeg from ElevenLabs, audio/wav from Retell and the simulator, …: read Content-Type). 404 recording_not_available when the provider kept none or the retention period has passed.",
    params: CallParams,
    response: {
      200: {
        description:
          'The recording, in the content type its provider gave, streamed as it arrives. Sent with Cache-Control: private, no-store (it is personal data), Accept-Ranges: none (ask for the whole file; no HEAD) and Content-Disposition: inline with a file name.',
        content: { 'audio/*': { schema: { type: 'string', format: 'binary' } } },
      },
      ...errorResponses(['not_found', 'recording_not_available', 'call_not_ended', 'provider_unavailable']),
    },
  };
  // No HEAD: it would download the whole recording from the provider to answer headers only.
  app.get('/calls/:id/recording', { schema: recordingSchema, exposeHeadRoute: false }, async (request, reply) => {
    const recording = await openRecording(deps.db, deps.providers, scopeOf(request), request.params.id, request.log);
    return sendRecording(request, reply, recording, request.params.id);
  });
  registerMethodNotAllowed(app, '/calls/:id/recording', ['GET'], { head: false });

  const cancelSchema = {
    operationId: 'cancelCall',
    tags: ['Calls'],
    summary: 'Cancel a call',
    description:
      'Ends the call: cancels it while it rings, hangs up once answered. Answers 202 with the call, which carries cancel_requested_at once its voice provider agreed; the call then ends as usual, with one event: call.failed with failure_reason cancelled if nobody had answered, call.completed otherwise. Cancelling again changes nothing (the same 202). Retell, Vapi and the simulator (test mode) can end calls; ElevenLabs cannot (409 cancel_not_supported). No body.',
    params: CallParams,
    response: {
      202: Call,
      ...errorResponses(['not_found', 'call_already_ended', 'cancel_not_supported', 'provider_error', 'provider_unavailable']),
    },
  };
  app.post('/calls/:id/cancel', { schema: cancelSchema }, async (request, reply) => {
    const call = await cancelCall(deps, scopeOf(request), request.params.id);
    return reply.code(202).send(call);
  });
  registerMethodNotAllowed(app, '/calls/:id/cancel', ['POST']);
};
