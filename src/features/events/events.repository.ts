/** The statements of the webhook_events table (the outbox). */
import type { Insertable } from 'kysely';
import { newerThan, olderThan, type ListCursor } from '../../db/cursor.js';
import type { Db } from '../../db/database.js';
import type { WebhookEventRow, WebhookEventsTable } from './events.tables.js';

/** Rows per multi-row INSERT: far below SQLite's 32,766 parameters, whatever the columns. */
const insertChunkRows = 500;

export async function insertEvents(db: Db, rows: readonly Insertable<WebhookEventsTable>[]): Promise<void> {
  for (let start = 0; start < rows.length; start += insertChunkRows) {
    await db
      .insertInto('webhook_events')
      .values(rows.slice(start, start + insertChunkRows))
      .execute();
  }
}

export async function findEvent(db: Db, id: string): Promise<WebhookEventRow | undefined> {
  return db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The type and call of several events (a page of deliveries). */
export async function listEventSummaries(db: Db, ids: readonly string[]): Promise<Pick<WebhookEventRow, 'id' | 'type' | 'call_id'>[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook_events')
    .select(['id', 'type', 'call_id'])
    .where('id', 'in', [...ids])
    .execute();
}

/** The payloads of several events (the deliveries a dispatcher claimed). */
export async function listEventPayloads(db: Db, ids: readonly string[]): Promise<Pick<WebhookEventRow, 'id' | 'payload'>[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook_events')
    .select(['id', 'payload'])
    .where('id', 'in', [...ids])
    .execute();
}

/** The events of a call, oldest first; only those of `accountId` when given. */
export async function listEventsForCall(db: Db, callId: string, accountId?: string): Promise<WebhookEventRow[]> {
  let query = db.selectFrom('webhook_events').selectAll().where('call_id', '=', callId);
  if (accountId !== undefined) query = query.where('account_id', '=', accountId);
  return query.orderBy('id').execute();
}

export interface EventPageFilter {
  accountId: string;
  mode: NonNullable<WebhookEventRow['mode']>;
  /** Only events created at or after this time (the API's window). */
  since: string;
  /** Only events created after this time (`created_after`). */
  createdAfter?: string;
  type?: string;
  /** The event the page starts after (the cursor), by its place in the order. */
  startingAfter?: { readonly createdAt: string; readonly id: string };
  limit: number;
}

/** An account's events of one mode, newest first (by creation time, then id): what GET /v1/events pages through. */
export async function listEventsOfMode(db: Db, filter: EventPageFilter): Promise<Pick<WebhookEventRow, 'id' | 'payload'>[]> {
  let query = db
    .selectFrom('webhook_events')
    .select(['id', 'payload'])
    .where('account_id', '=', filter.accountId)
    .where('mode', '=', filter.mode)
    .where('created_at', '>=', filter.since);
  if (filter.createdAfter !== undefined) query = query.where('created_at', '>', filter.createdAfter);
  if (filter.type !== undefined) query = query.where('type', '=', filter.type);
  const after = filter.startingAfter;
  if (after) {
    query = query.where(olderThan(after));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/** An event of this account and mode created at or after `since`; any other is as absent as an unknown one. */
export async function findEventOfMode(
  db: Db,
  accountId: string,
  mode: NonNullable<WebhookEventRow['mode']>,
  id: string,
  since: string,
): Promise<Pick<WebhookEventRow, 'id' | 'payload' | 'created_at'> | undefined> {
  return db
    .selectFrom('webhook_events')
    .select(['id', 'payload', 'created_at'])
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('mode', '=', mode)
    .where('created_at', '>=', since)
    .executeTakeFirst();
}

/** Events created before `before`, oldest first, from after `after` on (retention walks them in pages). */
export async function listEventsCreatedBefore(
  db: Db,
  before: string,
  after: ListCursor | undefined,
  limit: number,
): Promise<Pick<WebhookEventRow, 'id' | 'created_at'>[]> {
  let query = db.selectFrom('webhook_events').select(['id', 'created_at']).where('created_at', '<', before);
  if (after) query = query.where(newerThan(after));
  return query.orderBy('created_at').orderBy('id').limit(limit).execute();
}

/** Deletes these events; returns how many went. */
export async function deleteEvents(db: Db, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const result = await db
    .deleteFrom('webhook_events')
    .where('id', 'in', [...ids])
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The envelopes of `type` about these calls (their retention rewrites them). */
export async function listCallEventPayloads(
  db: Db,
  callIds: readonly string[],
  type: string,
): Promise<Pick<WebhookEventRow, 'id' | 'payload'>[]> {
  return db
    .selectFrom('webhook_events')
    .select(['id', 'payload'])
    .where('call_id', 'in', [...callIds])
    .where('type', '=', type)
    .execute();
}

export async function setEventPayload(db: Db, id: string, payload: string): Promise<void> {
  await db.updateTable('webhook_events').set({ payload }).where('id', '=', id).execute();
}
