/** The suppression list's statements. Every one is scoped to an account: another's entries do not exist. */
import type { Db } from '../../db/database.js';
import type { SuppressionRow } from './suppressions.tables.js';
import { olderThan } from '../../db/cursor.js';

/** Every column given: the row is the whole entry. */
export async function insertSuppression(db: Db, row: SuppressionRow): Promise<void> {
  await db.insertInto('suppressions').values(row).execute();
}

/**
 * Inserts the rows whose number is not on the account's list yet, in one transaction of the caller's;
 * returns those inserted. A number added meanwhile by another request is simply not inserted again.
 */
export async function insertMissing(db: Db, rows: readonly SuppressionRow[]): Promise<SuppressionRow[]> {
  if (rows.length === 0) return [];
  const inserted: SuppressionRow[] = [];
  // Rows per INSERT: 5 columns each stays well under both databases' limits on parameters.
  const chunkRows = 1_000;
  for (let start = 0; start < rows.length; start += chunkRows) {
    const chunk = await db
      .insertInto('suppressions')
      .values(rows.slice(start, start + chunkRows))
      .onConflict((oc) => oc.columns(['account_id', 'to_number']).doNothing())
      .returningAll()
      .execute();
    inserted.push(...chunk);
  }
  return inserted;
}

export async function findByNumber(db: Db, accountId: string, toNumber: string): Promise<SuppressionRow | undefined> {
  return db.selectFrom('suppressions').selectAll().where('account_id', '=', accountId).where('to_number', '=', toNumber).executeTakeFirst();
}

export async function findById(db: Db, accountId: string, id: string): Promise<SuppressionRow | undefined> {
  return db.selectFrom('suppressions').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

/** Newest first, by creation time and then id, as calls are listed. */
export async function listSuppressions(
  db: Db,
  filter: { readonly accountId: string; readonly limit: number; readonly startingAfter?: { createdAt: string; id: string } },
): Promise<SuppressionRow[]> {
  let query = db.selectFrom('suppressions').selectAll().where('account_id', '=', filter.accountId);
  const after = filter.startingAfter;
  if (after) {
    query = query.where(olderThan(after));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

export async function countSuppressions(db: Db, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('suppressions')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Removes the number from the account's list; false when it was not on it. */
export async function deleteByNumber(db: Db, accountId: string, toNumber: string): Promise<boolean> {
  const result = await db
    .deleteFrom('suppressions')
    .where('account_id', '=', accountId)
    .where('to_number', '=', toNumber)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
