import { sql } from 'kysely';
import type { AgentRow } from '../agents/agents.tables.js';
import { onSuppressionList } from '../suppressions/suppressions.repository.js';
import type { Db } from '../../db/database.js';
import { preparedQuery, type InsertStatement, type SelectStatement } from '../../db/prepared.js';
import { claimRows, jsonUpdate } from '../../db/claim.js';
import type { CallRow } from './calls.tables.js';
import { olderThan } from '../../db/cursor.js';

/** Every column given, none left to a default: the row is the whole call. */
export async function insertCall(db: Db, row: CallRow): Promise<void> {
  await insertCallQuery(db, row);
}

/** The columns of a new call, each from its field (a prepared query's parameters are read one by one). */
function callColumns(p: CallRow): CallRow {
  return {
    id: p.id,
    account_id: p.account_id,
    api_key_id: p.api_key_id,
    agent_id: p.agent_id,
    agent_ref: p.agent_ref,
    mode: p.mode,
    provider: p.provider,
    provider_conversation_id: p.provider_conversation_id,
    to_number: p.to_number,
    metadata: p.metadata,
    status: p.status,
    created_at: p.created_at,
    updated_at: p.updated_at,
    next_check_at: p.next_check_at,
    started_at: p.started_at,
    ended_at: p.ended_at,
    duration_seconds: p.duration_seconds,
    transcript_summary: p.transcript_summary,
    failure_reason: p.failure_reason,
    failure_message: p.failure_message,
    failed_at: p.failed_at,
    batch_id: p.batch_id,
    reference: p.reference,
  };
}

/**
 * The statement that stores a new call. Prepared: every POST /v1/calls runs it, alone or (with an
 * Idempotency-Key) together with the completion of the key (see KeyHold.insertCompleting).
 */
export const callInsert: InsertStatement<CallRow> = function insertCall(db, p) {
  return db.insertInto('calls').values(callColumns(p));
};

const insertCallQuery = preparedQuery('insert call', callInsert);

/** The agent a new call goes through, and whether the number it is to call is on the account's suppression list. */
export interface AgentToCall {
  readonly agent: AgentRow;
  readonly suppressed: boolean;
}

/** The agent `agentId` of the account and whether `to` is on its suppression list: `agentAndSuppression`'s row. */
export type AgentAndSuppressionRow = AgentRow & { readonly to_suppressed: unknown };

/**
 * The agent `agentId` of the account, and whether `to` is on the account's suppression list, in one statement:
 * every POST /v1/calls needs both before the provider is asked, and a read each cost a statement more (on
 * PostgreSQL a round trip). The route runs it with its Idempotency-Key's claim (withIdempotency's `read`).
 */
export const agentAndSuppression: SelectStatement<{ accountId: string; agentId: string; to: string }, AgentAndSuppressionRow> =
  function agentAndSuppressionOfNewCall(db, p) {
    return db
      .selectFrom('agents')
      .selectAll('agents')
      .select(onSuppressionList(sql.ref('agents.account_id'), sql.val(p.to)).as('to_suppressed'))
      .where('agents.account_id', '=', p.accountId)
      .where('agents.agent_id', '=', p.agentId);
  };

/** The agent of `agentAndSuppression`'s rows, undefined without such an agent (the list then does not matter). */
export function agentToCall(rows: readonly AgentAndSuppressionRow[]): AgentToCall | undefined {
  const row = rows[0];
  if (row === undefined) return undefined;
  const { to_suppressed: suppressed, ...agent } = row;
  // SQLite answers EXISTS with 0 or 1, PostgreSQL with a boolean.
  return { agent, suppressed: Boolean(suppressed) };
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
