/** The statements of the webhook_deliveries and webhook_attempts tables that people read and other features write. */
import { sql, type Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { WebhookAttemptRow, WebhookDeliveriesTable, WebhookDeliveryRow } from './deliveries.tables.js';

/** Rows per multi-row INSERT: far below SQLite's 32,766 parameters, whatever the columns. */
const insertChunkRows = 500;

export async function insertDeliveries(db: Db, rows: readonly Insertable<WebhookDeliveriesTable>[]): Promise<void> {
  for (let start = 0; start < rows.length; start += insertChunkRows) {
    await db
      .insertInto('webhook_deliveries')
      .values(rows.slice(start, start + insertChunkRows))
      .execute();
  }
}

export async function failPendingDeliveriesOfEndpoint(db: Db, endpointId: string, reason: string, at: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, last_error: reason, updated_at: at })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .execute();
}

export interface DeliveryFilter {
  accountId: string;
  status?: WebhookDeliveryRow['status'];
  endpointId?: string;
  eventId?: string;
  limit: number;
}

/** The account's deliveries that match, newest first. */
export async function listDeliveries(db: Db, filter: DeliveryFilter) {
  let query = db
    .selectFrom('webhook_deliveries')
    .select([
      'id',
      'event_id',
      'endpoint_id',
      'status',
      'trigger',
      'attempt_count',
      'next_attempt_at',
      'last_attempt_at',
      'last_status_code',
      'last_error',
      'created_at',
    ])
    .where('account_id', '=', filter.accountId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.endpointId) query = query.where('endpoint_id', '=', filter.endpointId);
  if (filter.eventId) query = query.where('event_id', '=', filter.eventId);
  return query.orderBy('id', 'desc').limit(filter.limit).execute();
}

/** The attempts of several deliveries at once (a page of deliveries), in attempt order. */
export async function listAttemptsOfDeliveries(db: Db, deliveryIds: readonly string[]): Promise<WebhookAttemptRow[]> {
  if (deliveryIds.length === 0) return [];
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', 'in', [...deliveryIds])
    .orderBy('delivery_id')
    .orderBy('attempt_number')
    .execute();
}

/** A delivery of this account only; another account's delivery is as absent as an unknown one. */
export async function findDeliveryInAccount(db: Db, accountId: string, id: string): Promise<WebhookDeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function listDeliveryEndpointsOfEvent(db: Db, eventId: string): Promise<{ endpoint_id: string }[]> {
  return db.selectFrom('webhook_deliveries').select('endpoint_id').distinct().where('event_id', '=', eventId).execute();
}

/** Deliveries of one slot (a UTC hour or day) by status and number of attempts made. */
export interface DeliveryStateCount {
  readonly slot: string;
  readonly status: WebhookDeliveryRow['status'];
  readonly attempt_count: number;
  readonly count: number;
}

/**
 * The account's deliveries made since `since` of events of `mode`, counted per slot of their creation, status
 * and attempts: one range of the (account_id, mode, created_at, status, attempt_count) index, read without the
 * table.
 */
export async function countDeliveryStates(
  db: Db,
  filter: { accountId: string; mode: ApiKeyMode; since: string; slotLength: 10 | 13 },
): Promise<DeliveryStateCount[]> {
  const slot = sql<string>`substr(created_at, 1, ${sql.lit(filter.slotLength)})`;
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select([slot.as('slot'), 'status', 'attempt_count', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('account_id', '=', filter.accountId)
    .where('mode', '=', filter.mode)
    .where('created_at', '>=', filter.since)
    .groupBy([slot, 'status', 'attempt_count'])
    .execute();
  return rows.map((row) => ({ ...row, attempt_count: Number(row.attempt_count), count: Number(row.count) }));
}

/** Of these events, those with a pending delivery (`pendingOnly`) or with any delivery at all. */
export async function listEventsWithDeliveries(db: Db, eventIds: readonly string[], pendingOnly: boolean): Promise<{ event_id: string }[]> {
  if (eventIds.length === 0) return [];
  let query = db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .distinct()
    .where('event_id', 'in', [...eventIds]);
  if (pendingOnly) query = query.where('status', '=', 'pending');
  return query.execute();
}

/** Deletes the ended deliveries of these events, with their attempts; pending ones stay. */
export async function deleteEndedDeliveriesOfEvents(db: Db, eventIds: readonly string[]): Promise<void> {
  if (eventIds.length === 0) return;
  const ids = [...eventIds];
  await db
    .deleteFrom('webhook_attempts')
    .where('delivery_id', 'in', (eb) =>
      eb.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', ids).where('status', '<>', 'pending'),
    )
    .execute();
  await db.deleteFrom('webhook_deliveries').where('event_id', 'in', ids).where('status', '<>', 'pending').execute();
}

/**
 * The latest attempt to an endpoint: the last attempt of its delivery attempted last. This reads every
 * delivery of the endpoint (no index orders them by attempt), so it serves the endpoints that fail, one at a
 * time, and never a list.
 */
export async function lastAttemptOfEndpoint(db: Db, endpointId: string): Promise<WebhookAttemptRow | undefined> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where((eb) =>
      eb(
        'delivery_id',
        '=',
        eb
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('endpoint_id', '=', endpointId)
          .where('last_attempt_at', 'is not', null)
          .orderBy('last_attempt_at', 'desc')
          .orderBy('id', 'desc')
          .limit(1),
      ),
    )
    .orderBy('attempt_number', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * When the endpoint's first pending delivery is due: one seek of webhook_deliveries_pending_idx ('pending' is
 * written out, so that SQLite sees that partial index apply).
 */
export async function firstPendingAttemptAt(db: Db, endpointId: string): Promise<string | null> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select('next_attempt_at')
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', sql.lit('pending'))
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return row?.next_attempt_at ?? null;
}
