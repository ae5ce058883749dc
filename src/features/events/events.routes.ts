/**
 * GET /v1/events and GET /v1/events/{id}: the key's events of the last 30 days in its mode, each the very
 * JSON its webhooks carried (sent as stored text, not re-serialised, so the bytes match the signed body).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import type { Db } from '../../db/database.js';
import { parseListLimit } from '../../http/list-limit.js';
import { parseIsoDateTime, type Clock } from '../../lib/clock.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import { getEventJson, listEventsPageJson } from './event-reads.service.js';
import { EventEnvelope, EventList, EventParams, ListEventsQuery } from './events.schemas.js';

export interface EventsDeps {
  readonly db: Db;
  readonly clock: Clock;
}

/**
 * Sends JSON that is already text: Fastify passes a string with a JSON content type through untouched (no
 * serializer, so no response schema applies to it). The schemas above still describe it to readers.
 */
function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json as never);
}

/** `created_after` as a date; its 400 names the likeliest slip, an offset's + sent unencoded. */
function parseCreatedAfter(text: string): Date {
  const createdAfter = parseIsoDateTime(text);
  if (createdAfter) return createdAfter;
  // An offset's + sent unencoded arrives as a space (form encoding): the likeliest slip, so say so.
  const plusAsSpace = / \d{2}(:?\d{2})?$/.test(text) && parseIsoDateTime(text.replace(/ (?=[^ ]*$)/, '+'));
  throw new ApiError(
    'invalid_request',
    plusAsSpace
      ? "created_after has a space where its offset's + should be: a + in a query string reads as a space, so send it as %2B (2026-11-24T09:00:00%2B01:00), or use Z."
      : 'created_after must be an ISO 8601 date and time with its time zone, such as 2026-11-24T09:00:00Z.',
    { param: 'created_after' },
  );
}

export const eventsRoutes: FastifyPluginAsyncTypebox<{ deps: EventsDeps }> = async (app, { deps }) => {
  app.get(
    '/events',
    {
      schema: {
        operationId: 'listEvents',
        tags: ['Events'],
        summary: 'List events',
        description:
          "The key's events of its mode of the last 30 days, newest first, each exactly the envelope its webhooks carried: a receiver that was down catches up here.",
        querystring: ListEventsQuery,
        response: { 200: EventList, ...errorResponses([]) },
      },
    },
    async (request, reply) => {
      const apiKey = requireApiKey(request);
      const limit = parseListLimit(request.query.limit);
      const { starting_after: startingAfter, type, created_after: createdAfterText } = request.query;
      const createdAfter = createdAfterText === undefined ? undefined : parseCreatedAfter(createdAfterText);
      const page = await listEventsPageJson(
        deps.db,
        deps.clock,
        { accountId: apiKey.account_id, mode: apiKey.mode },
        {
          limit,
          ...(startingAfter === undefined ? {} : { startingAfter }),
          ...(type === undefined ? {} : { type }),
          ...(createdAfter === undefined ? {} : { createdAfter }),
        },
      );
      return sendJsonText(reply, page);
    },
  );
  registerMethodNotAllowed(app, '/events', ['GET']);

  app.get(
    '/events/:id',
    {
      schema: {
        operationId: 'retrieveEvent',
        tags: ['Events'],
        summary: 'Retrieve an event',
        description: 'One event of the last 30 days, exactly the envelope its webhooks carried.',
        params: EventParams,
        response: { 200: EventEnvelope, ...errorResponses(['not_found']) },
      },
    },
    async (request, reply) => {
      const apiKey = requireApiKey(request);
      const event = await getEventJson(deps.db, deps.clock, { accountId: apiKey.account_id, mode: apiKey.mode }, request.params.id);
      return sendJsonText(reply, event);
    },
  );
  registerMethodNotAllowed(app, '/events/:id', ['GET']);
};
