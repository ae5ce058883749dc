/** The statements of the account concurrency limit: the account's limit, its lock, the count, the slots. */
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { lockRowsForWrite } from '../../db/locks.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { CallSlotRow } from './concurrency.tables.js';

/** The account's limit (null: none; undefined: no such account). */
export async function readLimit(db: Db, accountId: string): Promise<number | null | undefined> {
  const row = await db.selectFrom('accounts').select('max_concurrent_calls').where('id', '=', accountId).executeTakeFirst();
  return row?.max_concurrent_calls;
}

/**
 * Locks the account's row for the rest of the transaction and returns its limit as it is now: every process
 * that counts and takes the account's slots does so under this lock, one at a time.
 */
export async function lockLimit(trx: Db, accountId: string): Promise<number | null | undefined> {
  await lockRowsForWrite(trx, 'accounts', 'id', [accountId], 'max_concurrent_calls');
  return readLimit(trx, accountId);
}

/** The account's calls in progress in `mode`: placed without an outcome yet, and slots held for calls being placed. */
export async function countInProgress(db: Db, accountId: string, mode: ApiKeyMode, now: string): Promise<number> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('calls')
        .select(eb.fn.countAll<string | number>().as('n'))
        .where('account_id', '=', accountId)
        .where('mode', '=', mode)
        .where('status', '=', 'initiated')
        .as('calls'),
      eb
        .selectFrom('call_slots')
        .select(eb.fn.countAll<string | number>().as('n'))
        .where('account_id', '=', accountId)
        .where('mode', '=', mode)
        .where('expires_at', '>', now)
        .as('slots'),
    ])
    .executeTakeFirstOrThrow();
  return Number(row.calls) + Number(row.slots);
}

/**
 * The accounts (and modes) with as many calls in progress as their limit allows now: read without the lock,
 * a hint only (the batch dialer leaves their batches out of a pass; the claim counts again under the lock).
 */
export async function accountsAtLimit(db: Db, now: string): Promise<{ account_id: string; mode: ApiKeyMode }[]> {
  const { rows } = await sql<{ account_id: string; mode: ApiKeyMode }>`
    select a.id as account_id, m.mode as mode
    from accounts a, (select 'live' as mode union all select 'test' as mode) m
    where a.max_concurrent_calls is not null
      and (select count(*) from calls c where c.account_id = a.id and c.mode = m.mode and c.status = 'initiated')
        + (select count(*) from call_slots s where s.account_id = a.id and s.mode = m.mode and s.expires_at > ${now})
        >= a.max_concurrent_calls`.execute(db);
  return rows;
}

/**
 * A holder that takes a slot again (a batch recipient queued again after a provider's 429, whose first slot
 * could not be dropped while the database was away) keeps its one slot, with the new lease.
 */
export async function insertSlots(db: Db, rows: readonly CallSlotRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('call_slots')
    .values([...rows])
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({ expires_at: eb.ref('excluded.expires_at'), created_at: eb.ref('excluded.created_at') })),
    )
    .execute();
}

export async function deleteSlots(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length > 0)
    await db
      .deleteFrom('call_slots')
      .where('id', 'in', [...ids])
      .execute();
}

/** The account's slots whose holder's lease ended: they count no more, and are dropped under the lock. */
export async function deleteExpiredSlots(db: Db, accountId: string, now: string): Promise<void> {
  await db.deleteFrom('call_slots').where('account_id', '=', accountId).where('expires_at', '<=', now).execute();
}
