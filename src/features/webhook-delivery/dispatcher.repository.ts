/** The dispatcher's statements: claim due deliveries under a lease, write attempt results, release claims. */
import type { Db } from '../../db/database.js';
import { sql, type Insertable } from 'kysely';
import { jsonUpdate, type JsonUpdate } from '../../db/claim.js';
import { joinFirstRows, least } from '../../db/functions.js';
import { lockRowsForWrite, lockRowsInIdOrder } from '../../db/locks.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookDeliveryRow, WebhookEndpointBackoffRow } from './deliveries.tables.js';

/** A delivery as claimed: the rest of what its attempt needs (its event's payload, its endpoint) is read by the service. */
export type ClaimedRow = Pick<WebhookDeliveryRow, 'id' | 'event_id' | 'endpoint_id' | 'attempt_count'> & {
  /** How many runs of failures its endpoint is in (0 or 1; PostgreSQL's count comes as text). */
  readonly in_failure_run: unknown;
};

/**
 * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`, fairly between endpoints, in one
 * UPDATE:
 * - the endpoints with pending deliveries are found one index seek each (a loose scan of
 *   webhook_deliveries_pending_idx, whose order only that index gives: another one by endpoint would step
 *   over every ended delivery; 'pending' is written out so that both databases see that the partial index
 *   applies), so a large backlog of one endpoint costs nothing to step over;
 * - each has `perEndpoint` slots less its attempts in flight (deliveries under a lease, any worker's), counted
 *   up to `perEndpoint` from webhook_deliveries_claimed_idx alone. On PostgreSQL that index also holds the
 *   entries of released claims until a vacuum (each claim's lease outlives it): the LIMIT makes the planner
 *   walk the index, which marks dead entries as it goes, instead of a bitmap scan that visits them all every
 *   time; a condition on status made it take the pending index and step over every pending delivery. An
 *   endpoint backing off has no slot until its next try, then one (the probe). `slots` is materialized so
 *   that the count runs once per endpoint: inlined, PostgreSQL ran it for each candidate row (mid-drain, a
 *   claim took 26 ms instead of 4);
 * - with several dispatchers live (`webhook_workers`), each holds at most its part of an endpoint's slots,
 *   `perEndpoint` divided between them and rounded up: a worker wakes itself the moment its attempts end and
 *   would take every slot they freed before another worker looked (a second worker once made none of 820
 *   attempts to two endpoints). Its own claims are counted only then; alone, a worker pays nothing for it;
 * - each endpoint's first due deliveries fill its free slots, and endpoints take turns: every endpoint's
 *   first delivery, oldest first, then every endpoint's second, and so on up to `limit`.
 * The caller runs it under the claim lock (`lockTransaction`): the count of attempts in flight must see every
 * other worker's claim, which on PostgreSQL a statement can only do when it starts after that claim committed.
 */
export async function claimDueDeliveries(db: Db, claim: DeliveryClaim): Promise<ClaimedRow[]> {
  return (await claimStatement(db, claim).execute(db)).rows;
}

export interface DeliveryClaim {
  readonly workerId: string;
  readonly now: string;
  readonly leaseUntil: string;
  readonly limit: number;
  readonly perEndpoint: number;
}

/** The statement of `claimDueDeliveries` (apart, to read its plan). */
export function claimStatement(db: Db, claim: DeliveryClaim) {
  const { now } = claim;
  const perEndpoint = sql.lit(claim.perEndpoint);
  const firstDue = joinFirstRows(db, {
    table: 'webhook_deliveries',
    alias: 'd',
    where: (row) => sql`${sql.ref(`${row}.status`)} = 'pending' and ${sql.ref(`${row}.endpoint_id`)} = s.endpoint_id
      and ${sql.ref(`${row}.next_attempt_at`)} <= ${now}
      and (${sql.ref(`${row}.locked_until`)} is null or ${sql.ref(`${row}.locked_until`)} <= ${now})`,
    orderBy: (row) => sql`${sql.ref(`${row}.next_attempt_at`)}, ${sql.ref(`${row}.id`)}`,
    limit: claim.perEndpoint,
  });
  return sql<ClaimedRow>`with recursive
    pending_endpoints(endpoint_id) as (
      select (select n.endpoint_id from webhook_deliveries n where n.status = 'pending'
        order by n.endpoint_id, n.next_attempt_at limit 1)
      union all
      select (select n.endpoint_id from webhook_deliveries n where n.status = 'pending' and n.endpoint_id > p.endpoint_id
        order by n.endpoint_id, n.next_attempt_at limit 1)
      from pending_endpoints p where p.endpoint_id is not null
    ),
    workers as materialized (
      select count(*) as live from webhook_workers w where w.live_until > ${now}
    ),
    slots as materialized (
      select p.endpoint_id, ${least(
        db,
        sql`(case when b.next_try_at is null then ${perEndpoint} when b.next_try_at <= ${now} then 1 else 0 end)
        - (select count(*) from (select 1 from webhook_deliveries c where c.endpoint_id = p.endpoint_id
            and c.locked_until > ${now} limit ${perEndpoint}) as c)`,
        sql`(case when w.live <= 1 then ${perEndpoint} else (${perEndpoint} + w.live - 1) / w.live
          - (select count(*) from (select 1 from webhook_deliveries o where o.endpoint_id = p.endpoint_id
            and o.locked_until > ${now} and o.locked_by = ${claim.workerId} limit ${perEndpoint}) as o) end)`,
      )} as free
      from pending_endpoints p cross join workers w left join webhook_endpoint_backoffs b on b.endpoint_id = p.endpoint_id
      where p.endpoint_id is not null
    ),
    candidates as (
      select d.id, d.endpoint_id, d.next_attempt_at, s.free from slots s ${firstDue} where s.free > 0
    ),
    turns as (
      select id, free, next_attempt_at, row_number() over (partition by endpoint_id order by next_attempt_at, id) as turn
      from candidates
    )
    update webhook_deliveries set locked_by = ${claim.workerId}, locked_until = ${claim.leaseUntil}
    where id in (select id from turns where turn <= free order by turn, next_attempt_at, id limit ${claim.limit})
    returning id, event_id, endpoint_id, attempt_count,
      (select count(*) from webhook_endpoint_backoffs r where r.endpoint_id = webhook_deliveries.endpoint_id) as in_failure_run`;
}

/**
 * Counts dispatcher `workerId` as live until `liveUntil` (the claim splits each endpoint's slots between the
 * live ones), and deletes the rows of dispatchers gone since `staleBefore` (those that crashed: one that stops
 * deletes its own).
 */
export async function renewWorker(db: Db, workerId: string, liveUntil: string, staleBefore: string): Promise<void> {
  await db
    .insertInto('webhook_workers')
    .values({ id: workerId, live_until: liveUntil })
    .onConflict((oc) => oc.column('id').doUpdateSet({ live_until: liveUntil }))
    .execute();
  await db.deleteFrom('webhook_workers').where('live_until', '<', staleBefore).execute();
}

/** A dispatcher that stops: its part of the endpoints' slots goes to the others at once. */
export async function removeWorker(db: Db, workerId: string): Promise<void> {
  await db.deleteFrom('webhook_workers').where('id', '=', workerId).execute();
}

/** The dispatchers live at `now` (the metrics). */
export async function countLiveWorkers(db: Db, now: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_workers')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('live_until', '>', now)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The backoffs of these endpoints, if any (an endpoint in a run of failures). */
export async function listBackoffs(db: Db, endpointIds: readonly string[]): Promise<WebhookEndpointBackoffRow[]> {
  if (endpointIds.length === 0) return [];
  return db
    .selectFrom('webhook_endpoint_backoffs')
    .selectAll()
    .where('endpoint_id', 'in', [...endpointIds])
    .execute();
}

/**
 * Adds failures to the endpoints' runs (a row each, new or not), and returns the rows as they are now, locked
 * for the rest of the transaction on PostgreSQL (in endpoint order: `runs` must be sorted by endpoint id).
 */
export async function addFailures(
  db: Db,
  runs: readonly { readonly endpointId: string; readonly failures: number }[],
  at: string,
): Promise<WebhookEndpointBackoffRow[]> {
  if (runs.length === 0) return [];
  return db
    .insertInto('webhook_endpoint_backoffs')
    .values(
      runs.map((run) => ({ endpoint_id: run.endpointId, failures: run.failures, probes: 0, next_try_at: null, since: at, updated_at: at })),
    )
    .onConflict((oc) =>
      oc.column('endpoint_id').doUpdateSet((eb) => ({
        failures: sql<number>`${sql.ref('webhook_endpoint_backoffs.failures')} + ${eb.ref('excluded.failures')}`,
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .returningAll()
    .execute();
}

export async function setNextTry(
  db: Db,
  endpointId: string,
  changes: { readonly probes: number; readonly next_try_at: string; readonly updated_at: string },
): Promise<void> {
  await db.updateTable('webhook_endpoint_backoffs').set(changes).where('endpoint_id', '=', endpointId).execute();
}

/** Locks the runs of failures of these endpoints that exist, in endpoint order, for the rest of the transaction. */
export async function lockBackoffs(db: Db, endpointIds: readonly string[]): Promise<void> {
  await lockRowsForWrite(db, 'webhook_endpoint_backoffs', 'endpoint_id', endpointIds, 'updated_at');
}

/** Ends the runs of failures of these endpoints (one answered). */
export async function deleteBackoffs(db: Db, endpointIds: readonly string[]): Promise<void> {
  if (endpointIds.length === 0) return;
  await db
    .deleteFrom('webhook_endpoint_backoffs')
    .where('endpoint_id', 'in', [...endpointIds])
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
 * scrape time). Both read the index of pending deliveries (webhook_deliveries_pending_idx) alone; 'pending'
 * is written out, so that SQLite sees that partial index apply.
 */
export async function deliveryBacklog(db: Db, now: string): Promise<{ pending: number; oldestDueAt: string | null }> {
  const pending = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('status', '=', sql.lit('pending'))
    .executeTakeFirst();
  const oldest = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.min('next_attempt_at').as('next_attempt_at'))
    .where('status', '=', sql.lit('pending'))
    .where('next_attempt_at', '<=', now)
    .executeTakeFirst();
  return { pending: Number(pending?.n ?? 0), oldestDueAt: oldest?.next_attempt_at ?? null };
}
