/** The batch dialer's statements: which batches have work, the claim of recipients under a batch's lock. */
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { claimDue } from '../../jobs/claim.js';
import { hasFreeSlot } from '../concurrency/concurrency.repository.js';
import { activeRecipientStatuses, type BatchRow, type RecipientRow } from './batches.tables.js';
import { lockBatches } from './batches.repository.js';

const dialable = ['scheduled', 'running'] as const;

/**
 * Batches whose time has come with a recipient due now and a free slot, oldest start first. Read without
 * locks: the claim checks again under the batch's lock. Those at their limit (or their account's,
 * max_concurrent_calls) are left out, so a few full batches never hide the others from a pass.
 */
export async function dueBatches(db: Db, now: string, limit: number): Promise<BatchRow[]> {
  return db
    .selectFrom('batches as b')
    .selectAll('b')
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
    )
    .where((eb) =>
      eb(
        eb
          .selectFrom('batch_recipients as r')
          .select(eb.fn.countAll<number>().as('n'))
          .whereRef('r.batch_id', '=', 'b.id')
          .where('r.status', 'in', activeRecipientStatuses),
        '<',
        eb.ref('b.max_concurrency'),
      ),
    )
    .where(hasFreeSlot(sql.ref('b.account_id'), sql.ref('b.mode'), now))
    .orderBy('b.scheduled_at')
    .limit(limit)
    .execute();
}

/**
 * Locks the batch for this transaction when it may be dialed now, and returns it as it is now. On
 * PostgreSQL a batch another worker holds is skipped (SKIP LOCKED): that worker is filling its slots.
 */
export async function lockDueBatch(db: Db, dialect: 'sqlite' | 'postgres', id: string, now: string): Promise<BatchRow | undefined> {
  const query = db.selectFrom('batches').selectAll().where('id', '=', id).where('status', 'in', dialable).where('scheduled_at', '<=', now);
  if (dialect === 'postgres') return query.forUpdate().skipLocked().executeTakeFirst();
  await lockBatches(db, [id]);
  return query.executeTakeFirst();
}

/** Recipients of the batch being dialed or placed without an outcome: what max_concurrency limits. */
export async function countActive(db: Db, batchId: string): Promise<number> {
  const row = await db
    .selectFrom('batch_recipients')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('batch_id', '=', batchId)
    .where('status', 'in', activeRecipientStatuses)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Claims up to `limit` due recipients of the batch, in the order sent: `dialing`, leased until `leaseUntil`. */
export async function claimRecipients(
  db: Db,
  dialect: 'sqlite' | 'postgres',
  batchId: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<RecipientRow[]> {
  const rows = await claimDue(db, dialect, {
    table: 'batch_recipients',
    due: (eb) => eb.and([eb('batch_id', '=', batchId), eb('status', '=', 'queued'), eb('next_attempt_at', '<=', now)]),
    orderBy: 'position',
    limit,
    set: { status: 'dialing', locked_until: leaseUntil, updated_at: now },
  })
    .returningAll()
    .execute();
  return (rows as RecipientRow[]).sort((a, b) => a.position - b.position);
}

/**
 * The call placed for a dialing recipient: it is `in_progress` now. When the recipient was already failed
 * as interrupted (its lease ran out first), it keeps that state but learns its call. False then.
 */
export async function markPlaced(db: Db, recipientId: string, callId: string, now: string): Promise<boolean> {
  const placed = await db
    .updateTable('batch_recipients')
    .set({ status: 'in_progress', call_id: callId, locked_until: null, updated_at: now })
    .where('id', '=', recipientId)
    .where('status', '=', 'dialing')
    .executeTakeFirst();
  if (Number(placed.numUpdatedRows) > 0) return true;
  await db.updateTable('batch_recipients').set({ call_id: callId }).where('id', '=', recipientId).where('call_id', 'is', null).execute();
  return false;
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
