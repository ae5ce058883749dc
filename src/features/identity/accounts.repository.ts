import type { Db } from '../../db/database.js';
import type { AccountRow, UserRow } from '../../db/schema.js';

export async function insertAccount(db: Db, row: AccountRow): Promise<void> {
  await db.insertInto('accounts').values(row).execute();
}

export async function findAccountById(db: Db, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countAccounts(db: Db): Promise<number> {
  const row = await db.selectFrom('accounts').select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirst();
  return Number(row?.n ?? 0);
}

export async function listAccounts(db: Db): Promise<AccountRow[]> {
  return db.selectFrom('accounts').selectAll().orderBy('id').execute();
}

/** Every account with how many portal users it has, oldest first (ids sort by creation time). */
export async function listAccountsWithUserCounts(db: Db): Promise<(AccountRow & { users: number })[]> {
  const rows = await db
    .selectFrom('accounts')
    .leftJoin('users', 'users.account_id', 'accounts.id')
    .select(['accounts.id', 'accounts.name', 'accounts.created_at', (eb) => eb.fn.count<string | number>('users.id').as('users')])
    .groupBy(['accounts.id', 'accounts.name', 'accounts.created_at'])
    .orderBy('accounts.id')
    .execute();
  return rows.map((row) => ({ ...row, users: Number(row.users) }));
}

export async function insertUser(db: Db, row: UserRow): Promise<void> {
  await db.insertInto('users').values(row).execute();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}
