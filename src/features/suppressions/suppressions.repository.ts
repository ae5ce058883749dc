/** The suppression list's statements. Every one is scoped to an account: another's entries do not exist. */
import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';
import type { Db } from '../../db/database.js';
import { preparedQuery, type InsertStatement } from '../../db/prepared.js';
import type { SuppressionRow } from './suppressions.tables.js';
import { olderThan } from '../../db/cursor.js';

/** Every column given: the row is the whole entry. */
export const suppressionInsert: InsertStatement<SuppressionRow> = function insertSuppression(db, p) {
  return db.insertInto('suppressions').values({
    id: p.id,
    account_id: p.account_id,
    to_number: p.to_number,
    reason: p.reason,
    created_at: p.created_at,
  });
};

export async function insertSuppression(db: Db, row: SuppressionRow): Promise<void> {
  await suppressionInsert(db, row).execute();
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
  const { rows } = await selectByNumber(db, { accountId, toNumber });
  return rows[0];
}

// Prepared: every POST /v1/calls and every batch recipient's dial looks its number up.
const selectByNumber = preparedQuery('suppression of a number', (db, p: { accountId: string; toNumber: string }) =>
  db.selectFrom('suppressions').selectAll().where('account_id', '=', p.accountId).where('to_number', '=', p.toNumber),
);

/**
 * True where `toNumber` is on the list of the account of `accountId`, as a condition or column of another
 * query: POST /v1/calls reads it beside its agent, in one statement (calls.repository.ts). A number on the
 * list counts in both modes.
 */
export function onSuppressionList(accountId: Expression<string>, toNumber: Expression<string>): RawBuilder<SqlBool> {
  return sql<SqlBool>`exists (select 1 from suppressions s where s.account_id = ${accountId} and s.to_number = ${toNumber})`;
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
