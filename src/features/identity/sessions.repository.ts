import type { Db } from '../../db/database.js';
import type { PortalSessionRow } from './identity.tables.js';

export async function insertSession(db: Db, row: PortalSessionRow): Promise<void> {
  await db.insertInto('portal_sessions').values(row).execute();
}

/** A session with the email of its user and the name of its account, in one query. */
export async function findSessionWithUser(db: Db, id: string) {
  return db
    .selectFrom('portal_sessions as s')
    .innerJoin('users as u', 'u.id', 's.user_id')
    .innerJoin('accounts as a', 'a.id', 's.account_id')
    .selectAll('s')
    .select(['u.email', 'a.name as account_name'])
    .where('s.id', '=', id)
    .executeTakeFirst();
}

export async function touchSession(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('portal_sessions').set({ last_seen_at: at }).where('id', '=', id).execute();
}

export async function deleteSession(db: Db, id: string): Promise<void> {
  await db.deleteFrom('portal_sessions').where('id', '=', id).execute();
}

export async function deleteSessionsOfUser(db: Db, userId: string): Promise<number> {
  const result = await db.deleteFrom('portal_sessions').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Removes sessions past their absolute end or idle since before `idleBefore`. */
export async function deleteEndedSessions(db: Db, now: string, idleBefore: string): Promise<void> {
  await db
    .deleteFrom('portal_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
    .execute();
}

/** Deletes at most `limit` sessions past their absolute end or idle since before `idleBefore`; returns how many. */
export async function purgeEndedSessions(db: Db, now: string, idleBefore: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('portal_sessions')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('portal_sessions')
        .select('id')
        .where((inner) => inner.or([inner('expires_at', '<=', now), inner('last_seen_at', '<', idleBefore)]))
        .limit(limit),
    )
    // A session used since the select is not idle any more.
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<', idleBefore)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
