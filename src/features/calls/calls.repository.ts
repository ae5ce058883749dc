import type { Db } from '../../db/database.js';
import type { CallRow, CallUpdate, NewCallRow } from '../../db/schema.js';

export async function insertCall(db: Db, row: NewCallRow): Promise<void> {
  await db.insertInto('calls').values(row).execute();
}

/** A call of this account only; another account's call is as absent as an unknown one. */
export async function findCallInAccount(db: Db, accountId: string, id: string): Promise<CallRow | undefined> {
  return db.selectFrom('calls').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function findCallById(db: Db, id: string): Promise<CallRow | undefined> {
  return db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Records an outcome only while the call is still `initiated`: the ended call, or undefined when it had ended. */
export async function finishCall(db: Db, id: string, changes: CallUpdate): Promise<CallRow | undefined> {
  return db
    .updateTable('calls')
    .set(changes)
    .where('id', '=', id)
    .where('status', '=', 'initiated')
    .returningAll()
    .executeTakeFirst();
}

/**
 * Claims up to `limit` calls whose next look is due, pushing their next look to `leaseUntil` so that no
 * other process looks at them meanwhile, and returns them. One statement: on PostgreSQL the rows are
 * picked with FOR UPDATE SKIP LOCKED, so monitors in several processes never wait for each other; SQLite
 * runs one writer at a time, so the same conditional UPDATE is atomic there.
 */
export async function claimDueCalls(
  db: Db,
  dialect: 'sqlite' | 'postgres',
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<CallRow[]> {
  return db
    .updateTable('calls')
    .set({ next_check_at: leaseUntil })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('calls')
        .select('id')
        .where('status', '=', 'initiated')
        .where('next_check_at', '<=', now)
        .orderBy('next_check_at')
        .limit(limit);
      if (dialect === 'postgres') due = due.forUpdate().skipLocked();
      return due;
    })
    .where('status', '=', 'initiated')
    .where('next_check_at', '<=', now)
    .returningAll()
    .execute();
}

export async function setNextCheck(db: Db, id: string, next: string): Promise<void> {
  await db.updateTable('calls').set({ next_check_at: next }).where('id', '=', id).where('status', '=', 'initiated').execute();
}

export interface CallListFilter {
  accountId: string;
  limit: number;
  startingAfter?: string;
  status?: CallRow['status'];
  agentId?: string;
}

/** Newest first; ids are time-sortable, so "after" a cursor means an older id. */
export async function listCalls(db: Db, filter: CallListFilter): Promise<CallRow[]> {
  let query = db.selectFrom('calls').selectAll().where('account_id', '=', filter.accountId);
  if (filter.startingAfter) query = query.where('id', '<', filter.startingAfter);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.agentId) query = query.where('agent_id', '=', filter.agentId);
  return query.orderBy('id', 'desc').limit(filter.limit).execute();
}
