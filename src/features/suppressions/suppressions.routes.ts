import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import { e164Pattern, isE164 } from '../../lib/phone-numbers.js';
import { createCallPatternHints } from '../calls/calls.schemas.js';
import {
  CreateSuppressionBody,
  CreateSuppressionHeaders,
  ListSuppressionsQuery,
  Suppression,
  SuppressionList,
  SuppressionParams,
} from './suppressions.schemas.js';
import { addSuppression, getSuppression, listSuppressions, removeSuppression, type SuppressionsDeps } from './suppressions.service.js';

/** The number of the path, decoded by the router; a malformed one is a 400 that says how to write it. */
function numberOfPath(to: string): string {
  if (!isE164(to)) {
    throw new ApiError(
      'invalid_request',
      `The path must end with a phone number in E.164 format, its + URL-encoded: /v1/suppressions/%2B14155550123 (pattern ${e164Pattern}).`,
      { param: 'to' },
    );
  }
  return to;
}

export const suppressionsRoutes: FastifyPluginAsyncTypebox<{ deps: SuppressionsDeps }> = async (app, { deps }) => {
  app.post(
    '/suppressions',
    {
      schema: {
        operationId: 'createSuppression',
        tags: ['Suppressions'],
        summary: 'Add a number to the suppression list',
        description:
          'The number is never called again by this account, in test or live mode: POST /v1/calls answers 403 number_suppressed and batches skip it. 201 with the new entry; 200 with the existing entry, unchanged, when the number was already listed.',
        headers: CreateSuppressionHeaders,
        body: CreateSuppressionBody,
        response: {
          200: Type.Object(Suppression.properties, { description: 'Already listed: the existing entry, unchanged' }),
          201: Suppression,
          ...errorResponses(['invalid_idempotency_key', 'idempotency_conflict'], { body: true }),
        },
      },
      config: { idempotency: true, patternHints: createCallPatternHints },
    },
    async (request, reply) => {
      const result = await addSuppression(deps, requireApiKey(request).account_id, request.body, request.idempotencyKey);
      if (result.kind === 'existing') return reply.code(200).send(result.entry);
      return reply
        .code(result.response.status as 201)
        .headers(result.response.headers)
        .send(result.response.body as Suppression);
    },
  );

  app.get(
    '/suppressions',
    {
      schema: {
        operationId: 'listSuppressions',
        tags: ['Suppressions'],
        summary: 'List the suppression list',
        description: "The account's listed numbers, newest first, a page at a time.",
        querystring: ListSuppressionsQuery,
        response: { 200: SuppressionList, ...errorResponses([]) },
      },
    },
    async (request) => {
      const apiKey = requireApiKey(request);
      const { starting_after: startingAfter } = request.query;
      return listSuppressions(deps.db, apiKey.account_id, {
        limit: parseListLimit(request.query.limit),
        ...(startingAfter === undefined ? {} : { startingAfter }),
      });
    },
  );
  registerMethodNotAllowed(app, '/suppressions', ['GET', 'POST']);

  app.get(
    '/suppressions/:to',
    {
      schema: {
        operationId: 'retrieveSuppression',
        tags: ['Suppressions'],
        summary: 'Retrieve a listed number',
        description: 'The entry of a number, its + URL-encoded: /v1/suppressions/%2B14155550123.',
        params: SuppressionParams,
        response: { 200: Suppression, ...errorResponses(['not_found']) },
      },
    },
    async (request) => {
      return getSuppression(deps.db, requireApiKey(request).account_id, numberOfPath(request.params.to));
    },
  );

  app.delete(
    '/suppressions/:to',
    {
      schema: {
        operationId: 'deleteSuppression',
        tags: ['Suppressions'],
        summary: 'Remove a number from the suppression list',
        description: 'The number may be called again. Its + URL-encoded: /v1/suppressions/%2B14155550123.',
        params: SuppressionParams,
        response: { 204: Type.Null({ description: 'Removed' }), ...errorResponses(['not_found'], { body: true }) },
      },
    },
    async (request, reply) => {
      await removeSuppression(deps.db, requireApiKey(request).account_id, numberOfPath(request.params.to));
      return reply.code(204).send(null);
    },
  );
  registerMethodNotAllowed(app, '/suppressions/:to', ['GET', 'DELETE']);
};
