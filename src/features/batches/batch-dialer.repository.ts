/** The batch dialer's statements: which batches have work, the claim of recipients under a batch's lock. */
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { claimRows } from '../../db/claim.js';
import { greatest, least } from '../../db/functions.js';
import { selectLocked, tryLockWork } from '../../db/locks.js';
import { activeRecipientStatuses, type BatchRow, type RecipientRow } from './batches.tables.js';

const dialable = ['scheduled', 'running'] as const;

/**
 * Batches whose time has come with a recipient due now and a free slot, with their calls under way
 * (`active`). Read without locks: the claim checks again under the batch's lock. Those at their limit, or of an
 * account (and mode) in `fullAccounts` (at its max_concurrent_calls), are left out, so a few full batches never
 * hide the others from a pass. Accounts take turns: each account's (and mode's) batch with the fewest calls under
 * way comes first, then each one's second, and so on (within a turn, the oldest start first), so that one
 * account's many batches never fill a pass and keep another account's out of it.
 */
export async function dueBatches(
  db: Db,
  now: string,
  limit: number,
  fullAccounts: readonly { readonly accountId: string; readonly mode: BatchRow['mode'] }[] = [],
): Promise<(BatchRow & { active: number })[]> {
  let candidates = db
    .selectFrom('batches as b')
    .selectAll('b')
    .select((eb) =>
      eb
        .selectFrom('batch_recipients as r')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('r.batch_id', '=', 'b.id')
        .where('r.status', 'in', activeRecipientStatuses)
        .as('active'),
    )
    .where('b.status', 'in', dialable)
    .where('b.scheduled_at', '<=', now)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('batch_recipients as r')
          .select(sql`1`.as('one'))
          .whereRef('r.batch_id', '=', 'b.id')
          .where('r.status', '=', 'queued')
          .where('r.next_attempt_at', '<=', now),
      ),
    );
  if (fullAccounts.length > 0) {
    candidates = candidates.where((eb) =>
      eb.not(eb.or(fullAccounts.map((full) => eb.and([eb('b.account_id', '=', full.accountId), eb('b.mode', '=', full.mode)])))),
    );
  }
  const rows = await db
    .selectFrom(candidates.as('d'))
    .selectAll('d')
    .where((eb) => eb('d.active', '<', eb.ref('d.max_concurrency')))
    .orderBy(sql`row_number() over (partition by d.account_id, d.mode order by d.active, d.scheduled_at, d.id)`)
    .orderBy('d.scheduled_at')
    .orderBy('d.id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...row, active: Number(row.active) }));
}

/** The kind of work of the claims' advisory locks (any constant of its own; see tryLockWork). */
const claimLockNamespace = 0x62617463;

/**
 * Takes the batch's claim for this transaction when it may be dialed now, and returns it as it is now; a
 * batch whose claim another worker holds is skipped (that worker is filling its slots). The claim is a lock
 * of its own, not the batch's row: the transactions that end its recipients' calls hold the row for a moment
 * each, a hundred times a second in a batch of 1,000 calls at once, and a claim that skipped a held row
 * would leave the slot they just freed empty until the next wake-up. It waits for them instead (their lock
 * on the row, FOR NO KEY UPDATE, is its own), and counts the slots they freed; they wait for it in turn,
 * and pause and cancel with them, so none of them changes the batch under a claim.
 */
export async function lockDueBatch(db: Db, id: string, now: string): Promise<BatchRow | undefined> {
  if (!(await tryLockWork(db, claimLockNamespace, id))) return undefined;
  const query = db.selectFrom('batches').selectAll().where('id', '=', id).where('status', 'in', dialable).where('scheduled_at', '<=', now);
  const [batch] = await selectLocked(db, query);
  return batch;
}

/**
 * Claims the batch's due recipients, in the order sent, as many as it has free slots: `dialing`, leased
 * until `leaseUntil`. The free slots (max_concurrency less those `dialing` or `in_progress`: what
 * max_concurrency limits) are counted by the claim statement itself, which saves a round trip on the path
 * from a call's end to the next dial. The caller must hold the batch's lock (lockDueBatch) in this
 * transaction: the statement starts after the lock was granted, so on PostgreSQL it sees every claim that
 * another worker committed before letting the lock go, and no other claim can commit before this one.
 */
export async function claimRecipients(
  db: Db,
  batch: Pick<BatchRow, 'id' | 'max_concurrency'>,
  now: string,
  leaseUntil: string,
  /** At most this many (the account's free slots; Infinity without a limit). */
  cap = Number.POSITIVE_INFINITY,
  /** The workers live: each claims its part of the batch's free slots (rounded up), the others the rest. */
  workers = 1,
): Promise<RecipientRow[]> {
  const active = sql<number>`(select count(*) from batch_recipients where batch_id = ${batch.id} and status in (${sql.join(
    activeRecipientStatuses,
  )}))`;
  const split = Math.max(1, Math.trunc(workers));
  // Never a negative LIMIT: SQLite takes it for no limit at all, PostgreSQL refuses it. Integer division on both.
  const batchFree =
    split === 1
      ? greatest(db, sql.lit(0), sql<number>`${batch.max_concurrency} - ${active}`)
      : greatest(db, sql.lit(0), sql<number>`(${batch.max_concurrency} - ${active} + ${split - 1}) / ${split}`);
  // The batch's free slots are at most its max_concurrency: a cap at or above it changes nothing.
  const free = cap >= batch.max_concurrency ? batchFree : least(db, cap, batchFree);
  const rows = await claimRows(db, {
    table: 'batch_recipients',
    due: (eb) => eb.and([eb('batch_id', '=', batch.id), eb('status', '=', 'queued'), eb('next_attempt_at', '<=', now)]),
    orderBy: 'position',
    limit: free,
    // A claim is a dial (attempt) of the recipient: given back when none is made (429, a closed window).
    set: { status: 'dialing', locked_until: leaseUntil, updated_at: now, attempts: sql<number>`attempts + 1` },
  })
    .returningAll()
    .execute();
  return (rows as RecipientRow[]).sort((a, b) => a.position - b.position);
}

/** Recipients whose dialing lease ended: their worker died (or hung) while dialing. */
export async function expiredDialing(db: Db, now: string, limit: number): Promise<Pick<RecipientRow, 'id' | 'batch_id'>[]> {
  return db
    .selectFrom('batch_recipients')
    .select(['id', 'batch_id'])
    .where('status', '=', 'dialing')
    .where('locked_until', '<=', now)
    .orderBy('locked_until')
    .limit(limit)
    .execute();
}
