import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { requireApiKey } from '../api-keys/api-auth.hook.js';
import { errorResponses } from '../calls/calls.schemas.js';
import { withIdempotency } from '../idempotency/idempotency.hook.js';
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
  getBatch,
  listBatches,
  listLimitDefault,
  listLimitMax,
  listRecipients,
  type BatchAction,
  type BatchesDeps,
} from './batches.service.js';

/** The scope of an Idempotency-Key within an API key on the endpoint that creates batches. */
export const createBatchRoute = 'POST /v1/batches';

function parseLimit(text: string | undefined): number {
  const limit = text === undefined ? listLimitDefault : /^[0-9]{1,3}$/.test(text) ? Number(text) : Number.NaN;
  if (!(limit >= 1 && limit <= listLimitMax)) {
    throw new ApiError('invalid_request', `limit must be an integer from 1 to ${listLimitMax}.`, { param: 'limit' });
  }
  return limit;
}

const notFound = (mode: string, id: string) =>
  new ApiError(
    'not_found',
    id === '' ? 'A batch id is needed: /v1/batches/{id}.' : `No ${mode}-mode batch ${id.slice(0, 200)} in this account.`,
  );

const refusals: Record<BatchAction, (status: string) => ApiError> = {
  pause: (status) => new ApiError('batch_finished', `The batch is ${status}; only a scheduled or running batch can be paused.`),
  resume: (status) => new ApiError('batch_not_resumable', `The batch is ${status}; only a paused batch can be resumed.`),
  cancel: () => new ApiError('batch_finished', 'The batch has completed: every recipient has ended, nothing is left to cancel.'),
};

export const batchesRoutes: FastifyPluginAsyncTypebox<{ deps: BatchesDeps }> = async (app, { deps }) => {
  app.post(
    '/batches',
    {
      bodyLimit: batchBodyLimitBytes,
      config: { patternHints: createBatchPatternHints },
      schema: {
        headers: CreateBatchHeaders,
        body: CreateBatchBody,
        response: { 200: Batch, 201: Batch, ...errorResponses },
      },
      // A body that breaks the schema still meets the Idempotency-Key rules first (withIdempotency).
      attachValidation: true,
    },
    async (request, reply) =>
      withIdempotency(deps, createBatchRoute, request, reply, async (hold) => {
        const result = await createBatch(deps, requireApiKey(request), request.body, hold);
        switch (result.kind) {
          case 'invalid':
            throw new ApiError('invalid_request', result.message, { param: result.param });
          case 'agent_not_found':
            throw new ApiError('agent_not_found', `No agent ${JSON.stringify(request.body.agent_id).slice(0, 140)} in this account.`, {
              param: 'agent_id',
            });
          case 'created':
            return reply
              .code(result.response.status)
              .headers(result.response.headers)
              .send(result.response.body as Batch);
        }
      }),
  );

  app.get('/batches', { schema: { querystring: ListBatchesQuery, response: { 200: BatchList, ...errorResponses } } }, async (request) => {
    const apiKey = requireApiKey(request);
    const { starting_after: startingAfter, status } = request.query;
    const page = await listBatches(deps.db, apiKey.account_id, {
      mode: apiKey.mode,
      limit: parseLimit(request.query.limit),
      ...(startingAfter === undefined ? {} : { startingAfter }),
      ...(status === undefined ? {} : { status }),
    });
    if (!page) throw new ApiError('invalid_request', 'starting_after is not a batch of this account.', { param: 'starting_after' });
    return page;
  });
  registerMethodNotAllowed(app, '/batches', ['GET', 'POST']);

  app.get('/batches/:id', { schema: { params: BatchParams, response: { 200: Batch, ...errorResponses } } }, async (request) => {
    const apiKey = requireApiKey(request);
    const batch = await getBatch(deps.db, request.params.id, { accountId: apiKey.account_id, mode: apiKey.mode });
    if (!batch) throw notFound(apiKey.mode, request.params.id);
    return batch;
  });
  registerMethodNotAllowed(app, '/batches/:id', ['GET']);

  app.get(
    '/batches/:id/recipients',
    { schema: { params: BatchParams, querystring: ListRecipientsQuery, response: { 200: RecipientList, ...errorResponses } } },
    async (request) => {
      const apiKey = requireApiKey(request);
      const limit = parseLimit(request.query.limit);
      const batch = await getBatch(deps.db, request.params.id, { accountId: apiKey.account_id, mode: apiKey.mode });
      if (!batch) throw notFound(apiKey.mode, request.params.id);
      const { starting_after: startingAfter, status } = request.query;
      const page = await listRecipients(deps.db, batch.id, {
        limit,
        ...(startingAfter === undefined ? {} : { startingAfter }),
        ...(status === undefined ? {} : { status }),
      });
      if (!page) throw new ApiError('invalid_request', 'starting_after is not a recipient of this batch.', { param: 'starting_after' });
      return page;
    },
  );
  registerMethodNotAllowed(app, '/batches/:id/recipients', ['GET']);

  for (const action of ['pause', 'resume', 'cancel'] as const) {
    app.post(
      `/batches/:id/${action}`,
      { schema: { params: BatchParams, response: { 200: Batch, ...errorResponses } } },
      async (request) => {
        const apiKey = requireApiKey(request);
        const result = await changeBatch(deps, request.params.id, action, { accountId: apiKey.account_id, mode: apiKey.mode });
        if (result.kind === 'not_found') throw notFound(apiKey.mode, request.params.id);
        if (result.kind === 'refused') throw refusals[action](result.batch.status);
        return result.batch;
      },
    );
    registerMethodNotAllowed(app, `/batches/:id/${action}`, ['POST']);
  }
};
