import type { Db } from '../../db/database.js';
import type { UserRow } from './identity.tables.js';

export async function insertUser(db: Db, row: UserRow): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function updatePasswordHash(db: Db, id: string, passwordHash: string): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', id).execute();
}

/** The users of an account, oldest first. */
export async function listUsersOfAccount(db: Db, accountId: string): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().where('account_id', '=', accountId).orderBy('created_at').orderBy('id').execute();
}
