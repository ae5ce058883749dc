/** The dispatcher's statements: claim due deliveries under a lease, write attempt results, release claims. */
import type { Db } from '../../db/database.js';
import { sql, type Insertable } from 'kysely';
import { claimRows, jsonUpdate, type JsonUpdate } from '../../db/claim.js';
import { lockRowsInIdOrder } from '../../db/locks.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookDeliveryRow } from './deliveries.tables.js';

/** A delivery as claimed: the rest of what its attempt needs (its event's payload, its endpoint) is read by the service. */
export type ClaimedRow = Pick<WebhookDeliveryRow, 'id' | 'event_id' | 'endpoint_id' | 'attempt_count'>;

/** Claims up to `limit` due deliveries for `workerId` until `leaseUntil` (one conditional UPDATE, see `claimRows`). */
export async function claimDueDeliveries(db: Db, workerId: string, now: string, leaseUntil: string, limit: number): Promise<ClaimedRow[]> {
  return claimRows(db, {
    table: 'webhook_deliveries',
    due: (eb) =>
      eb.and([
        eb('status', '=', 'pending'),
        eb('next_attempt_at', '<=', now),
        eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]),
      ]),
    orderBy: 'next_attempt_at',
    limit,
    set: { locked_by: workerId, locked_until: leaseUntil },
  })
    .returning(['id', 'event_id', 'endpoint_id', 'attempt_count'])
    .execute();
}

/** What an attempt's result changes on its delivery. */
export type DeliveryResult = Partial<
  Pick<
    WebhookDeliveriesTable,
    'status' | 'next_attempt_at' | 'attempt_count' | 'last_attempt_at' | 'last_status_code' | 'last_error' | 'updated_at'
  >
>;

/** Each column of a DeliveryResult with its PostgreSQL type, for reading it back out of JSON. */
const resultColumnTypes: Readonly<Record<keyof DeliveryResult, 'text' | 'integer'>> = {
  status: 'text',
  next_attempt_at: 'text',
  attempt_count: 'integer',
  last_attempt_at: 'text',
  last_status_code: 'integer',
  last_error: 'text',
  updated_at: 'text',
};

/** One delivery's result to write: what changes on it, if `workerId` still holds its claim. */
export interface DeliveryUpdate {
  readonly deliveryId: string;
  readonly workerId: string;
  readonly delivery: DeliveryResult;
}

/** Locks the deliveries in id order before they are updated (see `lockRowsInIdOrder`). */
export async function lockDeliveriesInOrder(db: Db, ids: readonly string[]): Promise<void> {
  await lockRowsInIdOrder(db, 'webhook_deliveries', ids);
}

/**
 * Ends the pending deliveries of an endpoint that was just disabled and that no worker holds: one claimed
 * by another worker ends at its next attempt, which finds the endpoint disabled.
 */
export async function failUnclaimedPendingOfEndpoint(db: Db, endpointId: string, reason: string, at: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', next_attempt_at: null, last_error: reason, updated_at: at })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .where('locked_by', 'is', null)
    .execute();
}

export async function insertAttempts(db: Db, attempts: readonly Insertable<WebhookAttemptsTable>[]): Promise<void> {
  if (attempts.length > 0)
    await db
      .insertInto('webhook_attempts')
      .values([...attempts])
      .execute();
}

/**
 * Applies each result to its delivery, if `workerId` still holds the claim, and releases the claim. One
 * statement per set of changed columns (a response sets seven, a disabled endpoint four), whatever the
 * number of deliveries (`jsonUpdate`): a statement per delivery limited a worker on PostgreSQL to about
 * 3,000 deliveries a second. Returns the ids of the deliveries whose claim was still held.
 */
// One statement a set of changed columns (a handful of sets), each made once.
const deliveriesUpdates = new Map<string, JsonUpdate<{ id: string }>>();

function deliveriesUpdate(key: string, columns: readonly (keyof DeliveryResult)[]): JsonUpdate<{ id: string }> {
  let update = deliveriesUpdates.get(key);
  if (!update) {
    update = jsonUpdate<{ id: string }>({
      table: 'webhook_deliveries',
      fields: [['worker_id', 'text'], ...columns.map((column) => [column, resultColumnTypes[column]] as const)],
      columns,
      clear: ['locked_by', 'locked_until'],
      where: () => sql`t.locked_by = v.worker_id`,
      returning: 'id',
    });
    deliveriesUpdates.set(key, update);
  }
  return update;
}

export async function updateDeliveries(db: Db, records: readonly DeliveryUpdate[]): Promise<Set<string>> {
  const held = new Set<string>();
  const groups = new Map<string, DeliveryUpdate[]>();
  for (const record of records) {
    // As in Kysely's set(), a column given as undefined is left alone.
    const key = (Object.keys(record.delivery) as (keyof DeliveryResult)[])
      .filter((column) => record.delivery[column] !== undefined)
      .sort()
      .join(',');
    const group = groups.get(key);
    if (group) group.push(record);
    else groups.set(key, [record]);
  }
  for (const [key, group] of groups) {
    const columns = (key === '' ? [] : key.split(',')) as (keyof DeliveryResult)[];
    const rows = group.map((record) => {
      const row: Record<string, unknown> = { id: record.deliveryId, worker_id: record.workerId };
      for (const column of columns) row[column] = record.delivery[column] ?? null;
      return row;
    });
    const applied = await deliveriesUpdate(key, columns)(db, rows);
    for (const row of applied) held.add(row.id);
  }
  return held;
}
/** Gives claimed deliveries back (shutdown), so another worker may take them at once. */
export async function releaseClaims(db: Db, workerId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ locked_by: null, locked_until: null })
    .where('id', 'in', [...ids])
    .where('locked_by', '=', workerId)
    .execute();
}

/**
 * The deliveries waiting to be sent and the next-attempt time of the oldest one due (the metrics, at
 * scrape time). Both read the (status, next_attempt_at) index: a count of the pending range, and its first row.
 */
export async function deliveryBacklog(db: Db, now: string): Promise<{ pending: number; oldestDueAt: string | null }> {
  const pending = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('status', '=', 'pending')
    .executeTakeFirst();
  const oldest = await db
    .selectFrom('webhook_deliveries')
    .select('next_attempt_at')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .orderBy('next_attempt_at')
    .limit(1)
    .executeTakeFirst();
  return { pending: Number(pending?.n ?? 0), oldestDueAt: oldest?.next_attempt_at ?? null };
}
