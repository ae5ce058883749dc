/** The dispatcher's queries: claim due deliveries under a lease, record attempts, release claims. */
import type { Db } from '../../db/database.js';
import { sql, type Insertable } from 'kysely';
import { claimDue, jsonUpdate, type JsonUpdate } from '../../jobs/claim.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../webhooks/webhooks.tables.js';

export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempt_count: number;
  payload: string;
  url: string;
  enabled: number;
  deleted_at: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
}

/**
 * Claims up to `limit` due deliveries for `workerId` until `leaseUntil` (one conditional UPDATE, see
 * `claimDue`), then reads them with their event and endpoint.
 */
export async function claimDueDeliveries(
  db: Db,
  dialect: 'sqlite' | 'postgres',
  workerId: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const claimed = await claimDue(db, dialect, {
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
    .returning(['id'])
    .execute();
  if (claimed.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.endpoint_id',
      'd.attempt_count',
      'e.payload',
      'w.url',
      'w.enabled',
      'w.deleted_at',
      'w.secret',
      'w.previous_secret',
      'w.previous_secret_expires_at',
      'w.failing_since',
    ])
    .where(
      'd.id',
      'in',
      claimed.map((row) => row.id),
    )
    .where('d.locked_by', '=', workerId)
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

export interface AttemptRecord {
  attempt: Insertable<WebhookAttemptsTable> | null;
  deliveryId: string;
  workerId: string;
  delivery: DeliveryResult;
  endpointId: string;
  endpoint: Partial<WebhookEndpointsTable> | null;
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Writes the results of several attempts in one transaction (one fsync for many deliveries). Rows are
 * locked in one fixed order, endpoints then deliveries, each by id: two workers recording batches that
 * touch the same endpoints would otherwise deadlock on PostgreSQL, and the losing batch would stay
 * claimed until its lease ended and then be sent again. Returns how many results came too late: their claim
 * was lost (released at shutdown, or its lease ran out and another worker took the delivery).
 */
export async function recordAttempts(db: Db, dialect: 'sqlite' | 'postgres', records: readonly AttemptRecord[]): Promise<number> {
  // Several results for one endpoint become one update, applied in the order the results came.
  const endpointChanges = new Map<string, Partial<WebhookEndpointsTable>>();
  for (const record of records) {
    if (record.endpoint) endpointChanges.set(record.endpointId, { ...endpointChanges.get(record.endpointId), ...record.endpoint });
  }
  return db.transaction().execute(async (trx) => {
    for (const id of [...endpointChanges.keys()].sort(byId)) {
      await trx.updateTable('webhook_endpoints').set(endpointChanges.get(id)!).where('id', '=', id).execute();
    }
    const sorted = [...records].sort((a, b) => byId(a.deliveryId, b.deliveryId));
    if (dialect === 'postgres' && sorted.length > 1) {
      // The update below locks rows in whatever order its plan visits them; take the locks in id order first.
      await trx
        .selectFrom('webhook_deliveries')
        .select('id')
        .where(
          'id',
          'in',
          sorted.map((record) => record.deliveryId),
        )
        .orderBy('id')
        .forUpdate()
        .execute();
    }
    const held = await updateDeliveries(trx, sorted);
    // An endpoint disabled now (410, or failing for 5 days) keeps no pending deliveries, as when an operator
    // disables it; one claimed by another worker ends at its next attempt, which finds the endpoint disabled.
    for (const id of [...endpointChanges.keys()].sort(byId)) {
      const change = endpointChanges.get(id)!;
      if (change.enabled !== 0) continue;
      await trx
        .updateTable('webhook_deliveries')
        .set({
          status: 'failed',
          next_attempt_at: null,
          last_error: change.disabled_reason ?? 'The endpoint was disabled.',
          updated_at: change.updated_at!,
        })
        .where('endpoint_id', '=', id)
        .where('status', '=', 'pending')
        .where('locked_by', 'is', null)
        .execute();
    }
    // An attempt whose claim was lost (released at shutdown, or its lease taken over) is not this worker's to
    // record: the delivery went back to pending and its next attempt will carry the same number.
    const attempts = records.flatMap((record) => (record.attempt && held.has(record.deliveryId) ? [record.attempt] : []));
    if (attempts.length > 0) await trx.insertInto('webhook_attempts').values(attempts).execute();
    return records.length - held.size; // claims lost: the results not recorded
  });
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

async function updateDeliveries(db: Db, records: readonly AttemptRecord[]): Promise<Set<string>> {
  const held = new Set<string>();
  const groups = new Map<string, AttemptRecord[]>();
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
