import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { claimRows, jsonUpdate } from '../../db/claim.js';
import type { CallRow } from './calls.tables.js';
import { olderThan } from '../../db/cursor.js';
import { notByIndex } from '../../db/functions.js';

/** Every column given, none left to a default: the row is the whole call. */
export async function insertCall(db: Db, row: CallRow): Promise<void> {
  await db.insertInto('calls').values(row).execute();
}

/**
 * A call of this account only; another account's call is as absent as an unknown one. With `mode`, a call
 * made in the other mode is absent too (test keys never see live calls, nor live keys test calls).
 */
export async function findCallInAccount(db: Db, accountId: string, id: string, mode?: CallRow['mode']): Promise<CallRow | undefined> {
  let query = db.selectFrom('calls').selectAll().where('account_id', '=', accountId).where('id', '=', id);
  if (mode) query = query.where('mode', '=', mode);
  return query.executeTakeFirst();
}

export async function findCallById(db: Db, id: string): Promise<CallRow | undefined> {
  return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
}

/** What ending a call sets: the status and the fields of its outcome (null where the kind has none). */
export type CallEnding = Pick<
  CallRow,
  | 'id'
  | 'updated_at'
  | 'started_at'
  | 'ended_at'
  | 'duration_seconds'
  | 'transcript_summary'
  | 'failure_reason'
  | 'failure_message'
  | 'failed_at'
  | 'analysis_successful'
  | 'analysis_data'
> & { status: 'completed' | 'failed' };

const endingColumns = [
  ['status', 'text'],
  ['updated_at', 'text'],
  ['started_at', 'text'],
  ['ended_at', 'text'],
  ['duration_seconds', 'integer'],
  ['transcript_summary', 'text'],
  ['failure_reason', 'text'],
  ['failure_message', 'text'],
  ['failed_at', 'text'],
  ['analysis_successful', 'integer'],
  ['analysis_data', 'text'],
] as const;

/**
 * Ends calls, each only while it is still `initiated`, in one statement whatever their number (the rows
 * travel as one JSON parameter): the call monitor ends calls in batches, and a statement per call cost
 * PostgreSQL a round trip each. Returns the calls this ended; one that had ended already is not among them.
 */
export async function finishCalls(db: Db, endings: readonly CallEnding[]): Promise<CallRow[]> {
  return finishCallsUpdate(db, endings);
}

const finishCallsUpdate = jsonUpdate<CallRow>({
  table: 'calls',
  fields: endingColumns,
  columns: endingColumns.map(([column]) => column),
  clear: ['next_check_at'],
  // On SQLite the status is not looked up through its index: that read every initiated call and joined
  // each to the list; the list drives the join and each call is found by its id.
  where: (unindexed) => sql`${unindexed('status')} = 'initiated'`,
  returning: 'all',
});

/**
 * Claims up to `limit` calls whose next look is due, pushing their next look to `leaseUntil` so that no
 * other process looks at them meanwhile, and returns them (one conditional UPDATE, see `claimRows`).
 */
export async function claimDueCalls(db: Db, now: string, leaseUntil: string, limit: number): Promise<CallRow[]> {
  return claimRows(db, {
    table: 'calls',
    due: (eb) => eb.and([eb('status', '=', 'initiated'), eb('next_check_at', '<=', now)]),
    orderBy: 'next_check_at',
    limit,
    set: { next_check_at: leaseUntil },
  })
    .returningAll()
    .execute();
}

/** The calls of a batch that have not ended and nobody asked to end yet (a cancel with hang_up). */
export async function openCallsOfBatch(db: Db, batchId: string): Promise<CallRow[]> {
  return db
    .selectFrom('calls')
    .selectAll()
    .where('batch_id', '=', batchId)
    .where('status', '=', 'initiated')
    .where('cancel_requested_at', 'is', null)
    .execute();
}

/**
 * Notes that the provider agreed to end the call, and has the monitor look at it now: only for a call that has
 * not ended and had no cancel yet. Returns the call as it is then, or undefined when the guard did not hold.
 */
export async function markCancelRequested(db: Db, id: string, at: string): Promise<CallRow | undefined> {
  return db
    .updateTable('calls')
    .set({ cancel_requested_at: at, next_check_at: at, updated_at: at })
    .where('id', '=', id)
    .where('status', '=', 'initiated')
    .where('cancel_requested_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function setNextCheck(db: Db, id: string, next: string): Promise<void> {
  await db.updateTable('calls').set({ next_check_at: next }).where('id', '=', id).where('status', '=', 'initiated').execute();
}

export interface CallListFilter {
  accountId: string;
  limit: number;
  /** The call the page starts after (the cursor), by its place in the order. */
  startingAfter?: { readonly createdAt: string; readonly id: string };
  status?: CallRow['status'];
  agentId?: string;
  /** Only the calls to this number (E.164). */
  to?: string;
  batchId?: string;
  reference?: string;
  /** Exclusive bounds on created_at (ISO 8601 UTC, as stored). */
  createdAfter?: string;
  createdBefore?: string;
  /** Only the calls made in this mode (an API key's); all of them when absent (the portal). */
  mode?: CallRow['mode'];
}

/**
 * Newest first, by creation time and then id (calls made in the same millisecond). Ids alone are not
 * enough: a provider's conversation ids, which ours are made of, need not sort by time.
 */
export async function listCalls(db: Db, filter: CallListFilter): Promise<CallRow[]> {
  let query = db.selectFrom('calls').selectAll().where('account_id', '=', filter.accountId);
  const after = filter.startingAfter;
  if (after) {
    query = query.where(olderThan(after));
  }
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.agentId) query = query.where('agent_id', '=', filter.agentId);
  // Each equality has an index of (account_id, <column>, created_at, id) (0025-call-filters.ts): the page is
  // read in order from its range, with the bounds on created_at as its ends.
  if (filter.to !== undefined) query = query.where('to_number', '=', filter.to);
  if (filter.batchId !== undefined) query = query.where('batch_id', '=', filter.batchId);
  if (filter.reference !== undefined) query = query.where('reference', '=', filter.reference);
  // With one of those (a number's, a batch's or a recipient's few calls), its index drives the query: SQLite
  // would take a time span of (account_id, created_at, id) for narrower, and walk every call in it.
  const selective = filter.to !== undefined || filter.batchId !== undefined || filter.reference !== undefined;
  const createdAt = selective ? notByIndex(db, 'created_at') : sql.ref('created_at');
  if (filter.createdAfter !== undefined) query = query.where(createdAt, '>', filter.createdAfter);
  if (filter.createdBefore !== undefined) query = query.where(createdAt, '<', filter.createdBefore);
  if (filter.mode) query = query.where('mode', '=', filter.mode);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/** Calls of one slot (a UTC hour or day, `slotLength` characters of created_at) by status and failure reason. */
export interface CallOutcomeCount {
  readonly slot: string;
  readonly status: CallRow['status'];
  readonly failure_reason: string | null;
  readonly count: number;
}

/**
 * The account's calls in `mode` created since `since`, counted per slot, status and failure reason. One
 * range of the (account_id, mode, created_at, status, failure_reason) index, read without the table.
 */
export async function countCallOutcomes(
  db: Db,
  filter: { accountId: string; mode: CallRow['mode']; since: string; slotLength: 10 | 13 },
): Promise<CallOutcomeCount[]> {
  // A literal length, so that PostgreSQL sees the same expression in SELECT and GROUP BY.
  const slot = sql<string>`substr(created_at, 1, ${sql.lit(filter.slotLength)})`;
  const rows = await db
    .selectFrom('calls')
    .select([slot.as('slot'), 'status', 'failure_reason', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('account_id', '=', filter.accountId)
    .where('mode', '=', filter.mode)
    .where('created_at', '>=', filter.since)
    .groupBy([slot, 'status', 'failure_reason'])
    .execute();
  return rows.map((row) => ({ ...row, count: Number(row.count) }));
}
