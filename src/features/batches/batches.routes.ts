import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ErrorCode } from '../../errors/catalogue.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import {
  Batch,
  BatchList,
  BatchParams,
  CreateBatchBody,
  CreateBatchHeaders,
  ListBatchesQuery,
  ListRecipientsQuery,
  RecipientList,
  batchBodyLimitBytes,
  createBatchPatternHints,
} from './batches.schemas.js';
import {
  changeBatch,
  createBatch,
  listBatchRecipients,
  listBatches,
  retrieveBatch,
  type BatchAction,
  type BatchesDeps,
} from './batches.service.js';

const actionDocs: Record<BatchAction, { operationId: string; summary: string; description: string }> = {
  pause: {
    operationId: 'pauseBatch',
    summary: 'Pause a batch',
    description: 'No new recipient is dialed until it is resumed; calls under way go on. Pausing a paused batch changes nothing.',
  },
  resume: {
    operationId: 'resumeBatch',
    summary: 'Resume a paused batch',
    description: 'Dialing goes on where it stopped. Resuming a running or scheduled batch changes nothing.',
  },
  cancel: {
    operationId: 'cancelBatch',
    summary: 'Cancel a batch',
    description:
      'Recipients not yet dialed end cancelled; calls under way go on, or, with {"hang_up": true}, are asked to end as POST /v1/calls/{id}/cancel does (those of a provider that cannot end calls go on). batch.completed (status cancelled) follows once they ended, counting calls cancelled before anyone answered as cancelled. Cancelling again changes nothing (with hang_up, it asks to end the calls still under way).',
  },
};
const actionErrors: Record<BatchAction, ErrorCode[]> = {
  pause: ['not_found', 'batch_finished'],
  resume: ['not_found', 'batch_not_resumable'],
  cancel: ['not_found', 'batch_finished', 'provider_error', 'provider_unavailable'],
};

const CancelBatchBody = Type.Object(
  {
    hang_up: Type.Optional(
      Type.Boolean({ description: 'Also end the calls under way (cancel those ringing, hang up answered ones); default false' }),
    ),
  },
  { additionalProperties: false },
);

export const batchesRoutes: FastifyPluginAsyncTypebox<{ deps: BatchesDeps }> = async (app, { deps }) => {
  app.post(
    '/batches',
    {
      bodyLimit: batchBodyLimitBytes,
      config: { idempotency: true, patternHints: createBatchPatternHints },
      schema: {
        operationId: 'createBatch',
        tags: ['Batches'],
        summary: 'Create a batch of calls',
        description:
          'Up to 10,000 recipients called by one agent, from scheduled_at on, at most max_concurrency at a time, within an optional calling window, with optional retries of busy and unanswered lines. Each call ends with its call.* webhook; the batch with batch.completed. The body may be up to 10 MB. Send an Idempotency-Key to retry safely.',
        headers: CreateBatchHeaders,
        body: CreateBatchBody,
        response: { 201: Batch, ...errorResponses(['invalid_idempotency_key', 'agent_not_found', 'idempotency_conflict'], { body: true }) },
      },
    },
    async (request, reply) => {
      const created = await createBatch(deps, requireApiKey(request), request.body, request.idempotencyKey);
      return reply
        .code(201)
        .headers(created.headers)
        .send(created.body as Batch);
    },
  );

  const listSchema = {
    operationId: 'listBatches',
    tags: ['Batches'],
    summary: 'List batches',
    description: "The key's batches of its mode, newest first, a page at a time.",
    querystring: ListBatchesQuery,
    response: { 200: BatchList, ...errorResponses([]) },
  };
  app.get('/batches', { schema: listSchema }, async (request) => {
    const apiKey = requireApiKey(request);
    const { starting_after: startingAfter, status } = request.query;
    return listBatches(deps.db, apiKey.account_id, {
      mode: apiKey.mode,
      limit: parseListLimit(request.query.limit),
      ...(startingAfter === undefined ? {} : { startingAfter }),
      ...(status === undefined ? {} : { status }),
    });
  });
  registerMethodNotAllowed(app, '/batches', ['GET', 'POST']);

  const retrieveSchema = {
    operationId: 'retrieveBatch',
    tags: ['Batches'],
    summary: 'Retrieve a batch',
    description: 'The batch with its counts of recipients by state.',
    params: BatchParams,
    response: { 200: Batch, ...errorResponses(['not_found']) },
  };
  app.get('/batches/:id', { schema: retrieveSchema }, async (request) => {
    const apiKey = requireApiKey(request);
    return retrieveBatch(deps.db, request.params.id, { accountId: apiKey.account_id, mode: apiKey.mode });
  });
  registerMethodNotAllowed(app, '/batches/:id', ['GET']);

  app.get(
    '/batches/:id/recipients',
    {
      schema: {
        operationId: 'listBatchRecipients',
        tags: ['Batches'],
        summary: "List a batch's recipients",
        description: 'The recipients in the order sent, each with its state, attempts and calls, a page at a time.',
        params: BatchParams,
        querystring: ListRecipientsQuery,
        response: { 200: RecipientList, ...errorResponses(['not_found']) },
      },
    },
    async (request, reply) => {
      const apiKey = requireApiKey(request);
      const limit = parseListLimit(request.query.limit);
      const { starting_after: startingAfter, status } = request.query;
      const page = await listBatchRecipients(
        deps.db,
        request.params.id,
        { accountId: apiKey.account_id, mode: apiKey.mode },
        { limit, ...(startingAfter === undefined ? {} : { startingAfter }), ...(status === undefined ? {} : { status }) },
      );
      // The schema's serializer writes required fields before optional ones (call_id after updated_at); a
      // recipient is built in the schema's order by toRecipient, so that every representation shares it.
      return reply.serializer(JSON.stringify).send(page);
    },
  );
  registerMethodNotAllowed(app, '/batches/:id/recipients', ['GET']);

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    app.post(
      `/batches/:id/${action}`,
      {
        schema: {
          ...actionDocs[action],
          tags: ['Batches'],
          params: BatchParams,
          ...(action === 'cancel' ? { body: CancelBatchBody } : {}),
          response: { 200: Batch, ...errorResponses(actionErrors[action], { body: true }) },
        },
        // The body is optional: a cancel without one is the cancel of before (hang_up false).
        config: { optionalBody: action === 'cancel' },
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {};
        },
      },
      async (request) => {
        const apiKey = requireApiKey(request);
        const hangUp = action === 'cancel' && (request.body as { hang_up?: boolean } | undefined)?.hang_up === true;
        return changeBatch(deps, request.params.id, action, { accountId: apiKey.account_id, mode: apiKey.mode }, { hangUp });
      },
    );
    registerMethodNotAllowed(app, `/batches/:id/${action}`, ['POST']);
  }
};
