/**
 * Events as they are read. The events API (GET /v1/events): an API key reads its account's events of the last 30 days in its own
 * mode, so a receiver that was down can catch up. Each event is answered as the very bytes the dispatcher
 * signs and POSTs (the stored envelope), never rebuilt, so what the API shows is what a webhook carried.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import * as repo from './events.repository.js';
import type { WebhookEventRow } from './events.tables.js';

/** How far back the API reads (the events' retention is the operator's; this is the API's promise). */
export const eventsReadWindowMs = 30 * 24 * 60 * 60 * 1000;

/** The JSON of an event exactly as its webhooks carry it: the body the dispatcher signs. */
export function envelopeJson(event: Pick<WebhookEventRow, 'payload'>): string {
  return event.payload;
}

function windowStart(clock: Clock): string {
  return isoTimestamp(addMs(clock.now(), -eventsReadWindowMs));
}

export interface EventPageQuery {
  limit: number;
  startingAfter?: string;
  type?: string;
  createdAfter?: Date;
}

/**
 * A page of the key's events as JSON text, `{"data": [...], "has_more": …}`, newest first. `startingAfter`
 * must be an event this key can read, so a cursor cannot probe other accounts or modes (400 when it is not).
 */
export async function listEventsPageJson(
  db: Db,
  clock: Clock,
  key: { readonly accountId: string; readonly mode: ApiKeyMode },
  query: EventPageQuery,
): Promise<string> {
  const since = windowStart(clock);
  let cursor: { createdAt: string; id: string } | undefined;
  if (query.startingAfter !== undefined) {
    const row = query.startingAfter.includes('\u0000')
      ? undefined
      : await repo.findEventOfMode(db, key.accountId, key.mode, query.startingAfter, since);
    if (!row) {
      throw new ApiError('invalid_request', `starting_after is not a ${key.mode}-mode event of this account of the last 30 days.`, {
        param: 'starting_after',
      });
    }
    cursor = { createdAt: row.created_at, id: row.id };
  }
  const rows = await repo.listEventsOfMode(db, {
    accountId: key.accountId,
    mode: key.mode,
    since,
    limit: query.limit + 1,
    ...(query.createdAfter === undefined ? {} : { createdAfter: isoTimestamp(query.createdAfter) }),
    ...(query.type === undefined ? {} : { type: query.type }),
    ...(cursor === undefined ? {} : { startingAfter: cursor }),
  });
  const page = rows.slice(0, query.limit).map(envelopeJson);
  return `{"data":[${page.join(',')}],"has_more":${rows.length > query.limit}}`;
}

/** One of the key's events as JSON text; a `not_found` when it is unknown, another account's or mode's, or older than the window. */
export async function getEventJson(
  db: Db,
  clock: Clock,
  key: { readonly accountId: string; readonly mode: ApiKeyMode },
  id: string,
): Promise<string> {
  const row = id.includes('\u0000') ? undefined : await repo.findEventOfMode(db, key.accountId, key.mode, id, windowStart(clock));
  if (row) return envelopeJson(row);
  throw new ApiError(
    'not_found',
    id === '' ? 'An event id is needed: GET /v1/events/{id}.' : `No ${key.mode}-mode event ${id} in this account in the last 30 days.`,
  );
}

/** An event by id, of any account and age (a resend checks the account itself). */
export async function findEvent(db: Db, id: string): Promise<WebhookEventRow | undefined> {
  return repo.findEvent(db, id);
}

/** The events of one of the account's calls, oldest first (the portal's call page). */
export async function listEventsOfCall(db: Db, accountId: string, callId: string): Promise<WebhookEventRow[]> {
  return repo.listEventsForCall(db, callId, accountId);
}

/** The type and call of each of these events, by id (what a list of deliveries shows of their events). */
export async function eventSummaries(db: Db, ids: readonly string[]): Promise<Map<string, Pick<WebhookEventRow, 'type' | 'call_id'>>> {
  return new Map((await repo.listEventSummaries(db, [...new Set(ids)])).map((row) => [row.id, row]));
}

/** The signed bytes of each of these events, by id (the deliveries a dispatcher claimed). */
export async function eventPayloads(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  return new Map((await repo.listEventPayloads(db, [...new Set(ids)])).map((row) => [row.id, row.payload]));
}
