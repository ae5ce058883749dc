import type { Db } from '../../db/database.js';
import type { AccountRow } from './identity.tables.js';

export async function insertAccount(db: Db, row: AccountRow): Promise<void> {
  await db.insertInto('accounts').values(row).execute();
}

export async function findAccountById(db: Db, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function countAccounts(db: Db): Promise<number> {
  const row = await db
    .selectFrom('accounts')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Every account with how many portal users it has, oldest first (ids sort by creation time). */
export async function listAccountsWithUserCounts(db: Db): Promise<(AccountRow & { users: number })[]> {
  const rows = await db
    .selectFrom('accounts')
    .leftJoin('users', 'users.account_id', 'accounts.id')
    .select([
      'accounts.id',
      'accounts.name',
      'accounts.created_at',
      'accounts.max_concurrent_calls',
      (eb) => eb.fn.count<string | number>('users.id').as('users'),
    ])
    .groupBy(['accounts.id', 'accounts.name', 'accounts.created_at', 'accounts.max_concurrent_calls'])
    .orderBy('accounts.id')
    .execute();
  return rows.map((row) => ({ ...row, users: Number(row.users) }));
}

/** Sets the account's limit of calls in progress at once (null: none); false when there is no such account. */
export async function updateMaxConcurrentCalls(db: Db, id: string, limit: number | null): Promise<boolean> {
  const result = await db.updateTable('accounts').set({ max_concurrent_calls: limit }).where('id', '=', id).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
