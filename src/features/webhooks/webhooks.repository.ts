import { sql, type Insertable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { Db } from '../../db/database.js';
import type {
  WebhookDeliveriesTable,
  WebhookDeliveryRow,
  WebhookEndpointRow,
  WebhookEndpointsTable,
  WebhookEventRow,
  WebhookEventsTable,
} from './webhooks.tables.js';
import { olderThan } from '../../db/cursor.js';

export async function insertEndpoint(db: Db, row: Insertable<WebhookEndpointsTable>): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function findEndpoint(db: Db, id: string): Promise<WebhookEndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

export async function listEndpointsByAccount(db: Db, accountId: string): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

export async function listEnabledEndpoints(db: Db, accountId: string): Promise<WebhookEndpointRow[]> {
  return listEnabledEndpointsOfAccounts(db, [accountId]);
}

/** Every enabled endpoint of the installation, by account then id (`callgate doctor`). */
export async function listAllEnabledEndpoints(db: Db): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('deleted_at', 'is', null)
    .where('enabled', '=', 1)
    .orderBy('account_id')
    .orderBy('id')
    .execute();
}

/** The enabled endpoints of these accounts, in id order. */
export async function listEnabledEndpointsOfAccounts(db: Db, accountIds: readonly string[]): Promise<WebhookEndpointRow[]> {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', 'in', [...accountIds])
    .where('deleted_at', 'is', null)
    .where('enabled', '=', 1)
    .orderBy('id')
    .execute();
}

export async function updateEndpoint(db: Db, id: string, changes: Partial<WebhookEndpointsTable>): Promise<void> {
  await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
}

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

/** The events of a call, oldest first; only those of `accountId` when given. */
export async function listEventsForCall(db: Db, callId: string, accountId?: string): Promise<WebhookEventRow[]> {
  let query = db.selectFrom('webhook_events').selectAll().where('call_id', '=', callId);
  if (accountId !== undefined) query = query.where('account_id', '=', accountId);
  return query.orderBy('id').execute();
}

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

export async function listDeliveries(db: Db, filter: DeliveryFilter) {
  let query = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.endpoint_id',
      'd.status',
      'd.trigger',
      'd.attempt_count',
      'd.next_attempt_at',
      'd.last_attempt_at',
      'd.last_status_code',
      'd.last_error',
      'd.created_at',
      'e.type as event_type',
      'e.call_id',
      'w.url as endpoint_url',
      'w.description as endpoint_description',
      'w.deleted_at as endpoint_deleted_at',
    ])
    .where('d.account_id', '=', filter.accountId);
  if (filter.status) query = query.where('d.status', '=', filter.status);
  if (filter.endpointId) query = query.where('d.endpoint_id', '=', filter.endpointId);
  if (filter.eventId) query = query.where('d.event_id', '=', filter.eventId);
  return query.orderBy('d.id', 'desc').limit(filter.limit).execute();
}

/** The attempts of several deliveries at once (a page of deliveries), in attempt order. */
export async function listAttemptsOfDeliveries(db: Db, deliveryIds: readonly string[]) {
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
