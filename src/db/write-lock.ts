/** Row locks for a read-then-write under contention, as each database has them. */
import { sql } from 'kysely';
import { dialectOf, type Db } from './database.js';
import type { Database } from './schema.js';

/**
 * Holds the rows of `table` whose `column` is one of `ids` until the transaction `trx` ends, so that what
 * the caller counts next cannot change under it. On PostgreSQL a row lock FOR NO KEY UPDATE, taken in key
 * order (two transactions never wait for each other), which leaves the key-share locks of inserts that
 * reference the rows free to go on. On SQLite a write of `touch` to itself, which takes the database's one
 * write lock at once, before the caller reads anything (a read first could not be upgraded to a write after
 * another process wrote).
 */
export async function lockRowsForWrite<T extends keyof Database & string>(
  trx: Db,
  table: T,
  column: keyof Database[T] & string,
  ids: readonly string[],
  touch: keyof Database[T] & string,
): Promise<void> {
  if (ids.length === 0) return;
  const matched = sql`${sql.ref(column)} in (${sql.join([...new Set(ids)])})`;
  if (dialectOf(trx) === 'postgres') {
    await sql`select 1 from ${sql.table(table)} where ${matched} order by ${sql.ref(column)} for no key update`.execute(trx);
  } else {
    await sql`update ${sql.table(table)} set ${sql.ref(touch)} = ${sql.ref(touch)} where ${matched}`.execute(trx);
  }
}
