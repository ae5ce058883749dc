/**
 * Locks, one helper per need, each written for both databases: PostgreSQL locks rows (or takes an advisory
 * lock) until the transaction ends; SQLite has one writer, and a transaction holds the database once it
 * has written. Features say which lock they need and never ask which database they run on.
 */
import { sql, type SelectQueryBuilder } from 'kysely';
import { dialectOf, type Db } from './database.js';
import type { Database } from './schema.js';

/**
 * Takes SQLite's one write lock now, as `begin immediate` would (Kysely begins deferred): a write as the
 * first statement, one that changes nothing. Another process waits here (busy_timeout) instead of reading a
 * view that is stale by the time it writes.
 */
async function takeSqliteWriteLock(trx: Db): Promise<void> {
  await sql`update kysely_migration set name = name where 0`.execute(trx);
}

/**
 * Makes the rest of the transaction `trx` run one process at a time, whatever the number of processes on
 * the database: on PostgreSQL an advisory lock on `key` (any constant naming the work), held until the
 * transaction ends; on SQLite the database's write lock.
 */
export async function lockTransaction(trx: Db, key: number): Promise<void> {
  if (dialectOf(trx) === 'postgres') await sql`select pg_advisory_xact_lock(${key})`.execute(trx);
  else await takeSqliteWriteLock(trx);
}

/**
 * Runs `work` in a transaction that holds the lock `key` (as `lockTransaction`) from its start. On PostgreSQL
 * the BEGIN and the advisory lock travel in one round trip: a claim that runs under it for every batch of
 * work pays for the lock in its latency otherwise.
 */
export async function lockedTransaction<T>(db: Db, key: number, work: (trx: Db) => Promise<T>): Promise<T> {
  if (dialectOf(db) !== 'postgres') {
    return db.transaction().execute(async (trx) => {
      await takeSqliteWriteLock(trx);
      return work(trx);
    });
  }
  return db.connection().execute(async (connection) => {
    // Without parameters, pg sends the text as one simple query: both statements, one round trip.
    await sql.raw(`begin; select pg_advisory_xact_lock(${Math.trunc(key)})`).execute(connection);
    try {
      const result = await work(connection);
      await sql`commit`.execute(connection);
      return result;
    } catch (error) {
      await sql`rollback`.execute(connection).catch(() => undefined);
      throw error;
    }
  });
}

/**
 * Takes the lock of one piece of work (`id`, of the kind `namespace`) for the transaction `trx` if no other
 * transaction holds it, and says whether it did: on PostgreSQL a try of an advisory lock on the pair
 * (`namespace`, a hash of `id`), which never waits (another holder is doing that work now; two ids of one
 * hash only make one of them wait for the next pass). On SQLite, true at once: it has one writer, and the
 * caller's transaction takes the write lock with its first locked read (`selectLocked`).
 */
export async function tryLockWork(trx: Db, namespace: number, id: string): Promise<boolean> {
  if (dialectOf(trx) !== 'postgres') return true;
  const { rows } = await sql<{
    locked: boolean;
  }>`select pg_try_advisory_xact_lock(${Math.trunc(namespace)}, hashtext(${id})) as locked`.execute(trx);
  return rows[0]?.locked === true;
}

/**
 * Runs `query` and holds the rows it returns until the transaction `trx` ends, waiting for any transaction
 * that holds them. On PostgreSQL the rows are locked FOR NO KEY UPDATE (the lock of an update that keeps
 * their key: inserts of rows that reference them go on). On SQLite the transaction takes the write lock
 * first, so nothing read can change under it.
 */
export async function selectLocked<O>(
  trx: Db,
  // biome-ignore lint/suspicious/noExplicitAny: any table of the schema, any selection
  query: SelectQueryBuilder<Database, any, O>,
): Promise<O[]> {
  if (dialectOf(trx) !== 'postgres') {
    await takeSqliteWriteLock(trx);
    return query.execute();
  }
  return query.forNoKeyUpdate().execute();
}

/**
 * Locks rows of `table` in id order before the transaction `trx` updates them. An UPDATE locks rows in
 * whatever order its plan visits them, and two PostgreSQL transactions updating the same rows in different
 * orders deadlock. SQLite has one writer: nothing to order.
 */
export async function lockRowsInIdOrder(trx: Db, table: keyof Database, ids: readonly string[]): Promise<void> {
  if (dialectOf(trx) !== 'postgres' || ids.length < 2) return;
  await sql`select id from ${sql.table(table)} where id in (${sql.join([...ids])}) order by id for update`.execute(trx);
}

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
