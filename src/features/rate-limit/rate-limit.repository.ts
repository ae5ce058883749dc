import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { oncePerStatement, preparedQuery, withoutNames, type PreparedQuery, type SelectStatement } from '../../db/prepared.js';
import type { ReadToCount } from './rate-limit.interface.js';
import type { RateLimitsTables } from './rate-limit.tables.js';

export interface CountParams {
  /** `<limiter name>:`, as the library prefixes its keys. */
  readonly counterPrefix: string;
  readonly nowMs: number;
  /** The end of a window that starts now. */
  readonly expireMs: number;
  /** Longer names are not counted here: the limiter hashes them (`storedKey`), and counts them itself. */
  readonly maxNameChars: number;
}

type Counted = { rate_limit_points: number | null; rate_limit_expire: string | null };

// The names of the count's parameters, which a read's parameters must not use.
const countNames = new Set(
  Object.keys({ counterPrefix: 0, nowMs: 0, expireMs: 0, maxNameChars: 0 } satisfies Record<keyof CountParams, 0>),
);

/**
 * The read, and RateLimiterPostgres's upsert of the counter its row names (a data-modifying WITH): the same
 * insert, the same reset of a window that ended (`expire <= now`) and the same increment past the limit, so
 * that rows counted by either go on alike (processes of two releases share the table during a deploy).
 */
const countingQueries = oncePerStatement((statement: SelectStatement<object, { rate_limit_name: string | null }>) => {
  const name = statement.name || 'read';
  return preparedQuery(`rate limit count, ${name}`, (db: Db, p: CountParams) => {
    const ended = sql<boolean>`rate_limits.expire <= ${p.nowMs}::bigint`;
    return db
      .withTables<RateLimitsTables>()
      .with('read', () => statement(db, withoutNames(name, p, countNames)))
      .with('counted', (qc) =>
        qc
          .insertInto('rate_limits')
          .columns(['key', 'points', 'expire'])
          .expression((eb) =>
            eb
              .selectFrom('read')
              .select([
                sql<string>`${p.counterPrefix}::text || read.rate_limit_name`.as('key'),
                sql<number>`1`.as('points'),
                sql<string>`${p.expireMs}::bigint`.as('expire'),
              ])
              .where(sql<boolean>`octet_length(read.rate_limit_name) <= ${p.maxNameChars}::int`),
          )
          .onConflict((oc) =>
            oc.column('key').doUpdateSet({
              points: sql<number>`case when ${ended} then 1 else rate_limits.points + 1 end`,
              expire: sql<string>`case when ${ended} then ${p.expireMs}::bigint else rate_limits.expire end`,
            }),
          )
          .returning(['points', 'expire']),
      )
      .selectFrom('read')
      .leftJoin('counted', (join) => join.onTrue())
      .selectAll('read')
      .select(['counted.points as rate_limit_points', 'counted.expire as rate_limit_expire']);
  }) as PreparedQuery<CountParams & object, Record<string, unknown> & Counted>;
});

/** The read's row, and the counter's points and window end after this count (null when not counted). */
export async function readCounting<P extends object, Row extends { rate_limit_name: string | null }>(
  db: Db,
  read: ReadToCount<P, Row>,
  params: CountParams,
): Promise<{ readonly row: Row | undefined; readonly points: number | null; readonly expire: string | null }> {
  const query = countingQueries(read.statement as unknown as SelectStatement<object, { rate_limit_name: string | null }>);
  const { rows } = await query(db, { ...read.params, ...params });
  const first = rows[0];
  if (!first) return { row: undefined, points: null, expire: null };
  const { rate_limit_points, rate_limit_expire, ...own } = first;
  return { row: own as Row, points: rate_limit_points, expire: rate_limit_expire };
}
