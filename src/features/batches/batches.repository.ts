import { sql, type ExpressionBuilder } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import { lockRowsForWrite } from '../../db/locks.js';
import { jsonUpdate } from '../../db/claim.js';
import { openRecipientStatuses, type BatchRow, type BatchStatus, type RecipientRow, type RecipientStatus } from './batches.tables.js';
import { olderThan } from '../../db/cursor.js';

/** Every column given, none left to a default: the row is the whole batch. */
export async function insertBatch(db: Db, row: BatchRow): Promise<void> {
  await db.insertInto('batches').values(row).execute();
}

/** Rows per INSERT: 18 columns each stays well under both databases' limits on parameters. */
const insertChunkRows = 1_000;

export async function insertRecipients(db: Db, rows: readonly RecipientRow[]): Promise<void> {
  for (let start = 0; start < rows.length; start += insertChunkRows) {
    await db
      .insertInto('batch_recipients')
      .values(rows.slice(start, start + insertChunkRows))
      .execute();
  }
}

export interface BatchScope {
  /** Only a batch of this account; any account when absent (the operator's CLI). */
  readonly accountId?: string;
  /** Only a batch made in this mode (an API key's); both when absent (the portal, the CLI). */
  readonly mode?: BatchRow['mode'];
}

export async function findBatch(db: Db, id: string, scope: BatchScope = {}): Promise<BatchRow | undefined> {
  // No batch id has a NUL, and PostgreSQL refuses one in any text (an error, not a miss): a path's id may carry one.
  if (id.includes('\u0000')) return undefined;
  let query = db.selectFrom('batches').selectAll().where('id', '=', id);
  if (scope.accountId !== undefined) query = query.where('account_id', '=', scope.accountId);
  if (scope.mode !== undefined) query = query.where('mode', '=', scope.mode);
  return query.executeTakeFirst();
}

/** The mode (test or live) of each of these batches of the account. */
export async function modesOfBatches(db: Db, accountId: string, ids: readonly string[]): Promise<Map<string, BatchRow['mode']>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('batches').select(['id', 'mode']).where('account_id', '=', accountId).where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row.mode]));
}

export interface BatchListFilter {
  readonly accountId: string;
  readonly limit: number;
  readonly startingAfter?: { readonly createdAt: string; readonly id: string };
  readonly status?: BatchStatus;
  readonly mode?: BatchRow['mode'];
}

/** Newest first, by creation time and then id, as calls are listed. */
export async function listBatches(db: Db, filter: BatchListFilter): Promise<BatchRow[]> {
  let query = db.selectFrom('batches').selectAll().where('account_id', '=', filter.accountId);
  const after = filter.startingAfter;
  if (after) {
    query = query.where(olderThan(after));
  }
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.mode) query = query.where('mode', '=', filter.mode);
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/** How many recipients of each batch are in each state, in one statement. */
export async function countsByBatch(db: Db, batchIds: readonly string[]): Promise<Map<string, Map<RecipientStatus, number>>> {
  const counts = new Map<string, Map<RecipientStatus, number>>();
  if (batchIds.length === 0) return counts;
  const rows = await db
    .selectFrom('batch_recipients')
    .select(['batch_id', 'status', (eb) => eb.fn.countAll<string | number>().as('n')])
    .where('batch_id', 'in', batchIds)
    .groupBy(['batch_id', 'status'])
    .execute();
  for (const row of rows) {
    let of = counts.get(row.batch_id);
    if (!of) counts.set(row.batch_id, (of = new Map()));
    of.set(row.status, Number(row.n));
  }
  return counts;
}

export async function findBatches(db: Db, ids: readonly string[]): Promise<Map<string, BatchRow>> {
  if (ids.length === 0) return new Map();
  const rows = await db.selectFrom('batches').selectAll().where('id', 'in', ids).execute();
  return new Map(rows.map((row) => [row.id, row]));
}

export async function findRecipient(db: Db, batchId: string, id: string): Promise<RecipientRow | undefined> {
  return db.selectFrom('batch_recipients').selectAll().where('batch_id', '=', batchId).where('id', '=', id).executeTakeFirst();
}

/** A batch's recipients in the order sent, after the one at `afterPosition`. */
export async function listRecipients(
  db: Db,
  filter: { readonly batchId: string; readonly limit: number; readonly afterPosition?: number; readonly status?: RecipientStatus },
): Promise<RecipientRow[]> {
  let query = db.selectFrom('batch_recipients').selectAll().where('batch_id', '=', filter.batchId);
  if (filter.afterPosition !== undefined) query = query.where('position', '>', filter.afterPosition);
  if (filter.status) query = query.where('status', '=', filter.status);
  return query.orderBy('position').limit(filter.limit).execute();
}

/**
 * Holds the batches' rows until the transaction ends, so that what is counted next (free slots, open
 * recipients) cannot change under the caller: on PostgreSQL a row lock, taken in id order so that two
 * transactions never wait for each other; on SQLite a write, which takes the database's one write lock
 * at once instead of at the first later write (another process would otherwise count on a stale view).
 */
export async function lockBatches(db: Db, batchIds: readonly string[]): Promise<void> {
  await lockRowsForWrite(db, 'batches', 'id', batchIds, 'updated_at');
}

/** Moves a batch from one of `from` to `to`; returns the batch as it is now, or undefined if it was in no `from`. */
export async function setBatchStatus(
  db: Db,
  id: string,
  from: readonly BatchStatus[],
  to: BatchStatus,
  now: string,
): Promise<BatchRow | undefined> {
  return db
    .updateTable('batches')
    .set({ status: to, updated_at: now })
    .where('id', '=', id)
    .where('status', 'in', from)
    .returningAll()
    .executeTakeFirst();
}

/** Ends every queued recipient of the batch as cancelled. */
export async function cancelQueuedRecipients(db: Db, batchId: string, now: string): Promise<void> {
  await db
    .updateTable('batch_recipients')
    .set({ status: 'cancelled', updated_at: now })
    .where('batch_id', '=', batchId)
    .where('status', '=', 'queued')
    .execute();
}

/** Back to the queue after the provider could not take the call now (429, unavailable): not a failure. */
export async function requeueDialingRecipient(
  db: Db,
  recipientId: string,
  nextAttemptAt: string,
  now: string,
  /** Counted as a deferral (the provider could not take the call now), for the backoff of the next one. */
  deferral = true,
): Promise<void> {
  await db
    .updateTable('batch_recipients')
    .set((eb) => ({
      status: 'queued',
      next_attempt_at: nextAttemptAt,
      deferrals: deferral ? eb('deferrals', '+', 1) : eb.ref('deferrals'),
      // The claim counted a dial that did not happen.
      attempts: eb('attempts', '-', 1),
      locked_until: null,
      updated_at: now,
    }))
    .where('id', '=', recipientId)
    .where('status', '=', 'dialing')
    .execute();
}

/** A dialing recipient of a batch cancelled meanwhile, whose call was not placed: cancelled with the rest. */
export async function cancelDialingRecipient(db: Db, recipientId: string, now: string): Promise<void> {
  await db
    .updateTable('batch_recipients')
    .set((eb) => ({ status: 'cancelled', attempts: eb('attempts', '-', 1), locked_until: null, updated_at: now }))
    .where('id', '=', recipientId)
    .where('status', '=', 'dialing')
    .execute();
}

export type RecipientEnding = Readonly<{
  id: string;
  /** `cancelled` for a call that was cancelled before anyone answered (its failure_reason says so too). */
  status: 'completed' | 'failed' | 'cancelled';
  failure_reason: string | null;
  failure_message: string | null;
  updated_at: string;
}>;

export type RecipientOfCall = Pick<RecipientRow, 'id' | 'batch_id' | 'call_id' | 'to_number' | 'attempts' | 'time_zones' | 'deferrals'>;

export async function recipientsOfCalls(db: Db, callIds: readonly string[]): Promise<RecipientOfCall[]> {
  if (callIds.length === 0) return [];
  return db
    .selectFrom('batch_recipients')
    .select(['id', 'batch_id', 'call_id', 'to_number', 'attempts', 'time_zones', 'deferrals'])
    .where('call_id', 'in', callIds)
    .execute();
}

export type RecipientRetry = Readonly<{
  id: string;
  next_attempt_at: string;
  /** The failed call's: kept on the queued row, so that it says why it waits (its last_failure_reason). */
  failure_reason: string | null;
  failure_message: string | null;
  updated_at: string;
}>;

/** Recipients whose call failed for a reason their batch retries: queued again for `next_attempt_at`. */
export async function requeueForRetry(db: Db, retries: readonly RecipientRetry[]): Promise<void> {
  await requeueUpdate(
    db,
    retries.map((retry) => ({ ...retry, status: 'queued' })),
  );
}

/**
 * Recipients whose call the provider refused at its concurrency limit: queued again for `next_attempt_at`,
 * their dial given back and the deferral counted, as after a 429. Rare (one a refusal), so a statement each.
 */
export async function requeueRefusedCalls(
  db: Db,
  rows: readonly Readonly<{ id: string; next_attempt_at: string; updated_at: string }>[],
): Promise<void> {
  for (const row of rows) {
    await db
      .updateTable('batch_recipients')
      .set((eb) => ({
        status: 'queued',
        next_attempt_at: row.next_attempt_at,
        deferrals: eb('deferrals', '+', 1),
        attempts: eb('attempts', '-', 1),
        updated_at: row.updated_at,
      }))
      .where('id', '=', row.id)
      .where('status', '=', 'in_progress')
      .execute();
  }
}

const requeueFields = [
  ['next_attempt_at', 'text'],
  ['failure_reason', 'text'],
  ['failure_message', 'text'],
  ['updated_at', 'text'],
  ['status', 'text'],
] as const;

const requeueUpdate = jsonUpdate({
  table: 'batch_recipients',
  fields: requeueFields,
  columns: requeueFields.map(([column]) => column),
  where: (unindexed) => sql`${unindexed('status')} = 'in_progress'`,
  returning: 'id',
});

/**
 * Claimed recipients whose calling window is closed now go back to the queue until it opens (the claim's
 * dial given back), and so do the batch's queued ones checked in the same zones whose next attempt came
 * before the opening: they cannot be dialed before it either, and no pass need claim them to learn that.
 */
export async function holdUntilOpening(
  db: Db,
  batchId: string,
  hold: { readonly ids: readonly string[]; readonly timeZones: string; readonly opening: string; readonly now: string },
): Promise<void> {
  await db
    .updateTable('batch_recipients')
    .set((eb) => ({
      status: 'queued',
      next_attempt_at: hold.opening,
      attempts: eb('attempts', '-', 1),
      locked_until: null,
      updated_at: hold.now,
    }))
    .where('id', 'in', hold.ids)
    .where('status', '=', 'dialing')
    .execute();
  await db
    .updateTable('batch_recipients')
    .set({ next_attempt_at: hold.opening })
    .where('batch_id', '=', batchId)
    .where('status', '=', 'queued')
    .where('time_zones', '=', hold.timeZones)
    .where('next_attempt_at', '<', hold.opening)
    .execute();
}

/** Ends recipients whose call ended, each only while `in_progress` (an interrupted one stays as it is). */
export async function endRecipients(db: Db, endings: readonly RecipientEnding[]): Promise<void> {
  await endRecipientsUpdate(db, endings);
}

const recipientEndingFields = [
  ['status', 'text'],
  ['failure_reason', 'text'],
  ['failure_message', 'text'],
  ['updated_at', 'text'],
] as const;

const endRecipientsUpdate = jsonUpdate({
  table: 'batch_recipients',
  fields: recipientEndingFields,
  columns: recipientEndingFields.map(([column]) => column),
  where: (unindexed) => sql`${unindexed('status')} = 'in_progress'`,
  returning: 'id',
});

/**
 * Fails recipients that are `dialing`; with `leaseEndedBy`, only those whose lease ended by then. Returns
 * the ids it failed.
 */
export async function failDialingRecipients(
  db: Db,
  ids: readonly string[],
  failure: {
    readonly reason: string;
    readonly message: string | null;
    readonly now: string;
    readonly leaseEndedBy?: string;
    /** Failed before the provider was asked (a suppressed number): the claim's counted dial is given back. */
    readonly notDialed?: boolean;
  },
): Promise<string[]> {
  if (ids.length === 0) return [];
  let query = db
    .updateTable('batch_recipients')
    .set((eb) => ({
      status: 'failed',
      failure_reason: failure.reason,
      failure_message: failure.message,
      locked_until: null,
      updated_at: failure.now,
      ...(failure.notDialed ? { attempts: eb('attempts', '-', 1) } : {}),
    }))
    .where('id', 'in', ids)
    .where('status', '=', 'dialing');
  if (failure.leaseEndedBy !== undefined) query = query.where('locked_until', '<=', failure.leaseEndedBy);
  return (await query.returning('id').execute()).map((row) => row.id);
}

/** Whether the batch `b` has a recipient that has not ended; looked at up to its first open one. */
const hasOpenRecipient = (eb: ExpressionBuilder<Database & { b: Database['batches'] }, 'b'>) =>
  eb.exists(
    eb
      .selectFrom('batch_recipients as r')
      .select(sql.lit(1).as('one'))
      .whereRef('r.batch_id', '=', 'b.id')
      .where('r.status', 'in', openRecipientStatuses),
  );

/** Of these batches, those with a recipient that has not ended (each looked at up to its first open one). */
export async function batchesWithOpenRecipients(db: Db, batchIds: readonly string[]): Promise<Set<string>> {
  if (batchIds.length === 0) return new Set();
  const rows = await db.selectFrom('batches as b').select('b.id').where('b.id', 'in', batchIds).where(hasOpenRecipient).execute();
  return new Set(rows.map((row) => row.id));
}

/**
 * Batches not finished although none of their recipients is open: a process stopped between ending a
 * batch's last call and finishing the batch (finishEndedBatches). The dialer's sweep finishes them.
 */
export async function unfinishedBatchesWithoutOpenRecipients(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('batches as b')
    .select('b.id')
    // By status first (batches_due_idx): finished batches pile up, unfinished ones are few.
    .where('b.status', 'in', ['scheduled', 'running', 'paused', 'cancelled'])
    .where('b.completed_at', 'is', null)
    .where((eb) => eb.not(hasOpenRecipient(eb)))
    .orderBy('b.id')
    .limit(limit)
    .execute();
  return rows.map((row) => row.id);
}

/**
 * Marks batches whose recipients have all ended: `completed` (a cancelled batch stays `cancelled`), with
 * `completed_at`. Only once: returns the batches this call finished.
 */
export async function markBatchesFinished(db: Db, batchIds: readonly string[], now: string): Promise<BatchRow[]> {
  if (batchIds.length === 0) return [];
  return db
    .updateTable('batches')
    .set({
      status: sql<BatchStatus>`case when status = 'cancelled' then 'cancelled' else 'completed' end`,
      completed_at: now,
      updated_at: now,
    })
    .where('id', 'in', batchIds)
    .where('completed_at', 'is', null)
    .returningAll()
    .execute();
}

/** Holds a dialing recipient until `until`: its dial is recorded, and only the dial's outcome frees it. */
export async function holdDialingRecipient(db: Db, recipientId: string, until: string): Promise<void> {
  await db
    .updateTable('batch_recipients')
    .set({ locked_until: until })
    .where('id', '=', recipientId)
    .where('status', '=', 'dialing')
    .execute();
}

/**
 * The call placed for a dialing recipient (`callIds`: its calls with this one, as JSON): it is `in_progress`
 * now. When the recipient was already failed as interrupted (its lease ran out first), it keeps that final
 * state but learns its call. False then.
 */
export async function recipientPlaced(db: Db, recipientId: string, callId: string, callIds: string, now: string): Promise<boolean> {
  const placed = await db
    .updateTable('batch_recipients')
    .set({ status: 'in_progress', call_id: callId, call_ids: callIds, locked_until: null, updated_at: now })
    .where('id', '=', recipientId)
    .where('status', '=', 'dialing')
    .executeTakeFirst();
  if (Number(placed.numUpdatedRows) > 0) return true;
  await db.updateTable('batch_recipients').set({ call_id: callId, call_ids: callIds }).where('id', '=', recipientId).execute();
  return false;
}

/** Of these recipients, those still `dialing` whose lease ended by `leaseEndedBy`. */
export async function expiredDialingOf(db: Db, ids: readonly string[], leaseEndedBy: string): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('batch_recipients')
    .select('id')
    .where('id', 'in', ids)
    .where('status', '=', 'dialing')
    .where('locked_until', '<=', leaseEndedBy)
    .execute();
  return rows.map((row) => row.id);
}
