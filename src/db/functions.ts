/**
 * SQL functions that the two databases name differently. PostgreSQL's `greatest`/`least` are SQLite's
 * scalar `max`/`min` with several arguments.
 */
import { sql, type Expression, type RawBuilder } from 'kysely';
import { dialectOf, type Db } from './database.js';

/** The largest of the values: `greatest(…)` on PostgreSQL, `max(…)` on SQLite. */
export function greatest(db: Db, ...values: readonly (Expression<number> | number)[]): RawBuilder<number> {
  return sql<number>`${sql.raw(dialectOf(db) === 'postgres' ? 'greatest' : 'max')}(${sql.join(values)})`;
}

/** The smallest of the values: `least(…)` on PostgreSQL, `min(…)` on SQLite. */
export function least(db: Db, ...values: readonly (Expression<number> | number)[]): RawBuilder<number> {
  return sql<number>`${sql.raw(dialectOf(db) === 'postgres' ? 'least' : 'min')}(${sql.join(values)})`;
}

/**
 * A join, as `alias`, to the first `limit` rows of `table` (in `orderBy`) that match `where`, for each row of
 * the query it follows: PostgreSQL's LATERAL subquery; SQLite has none, and looks the rows up by the ids of a
 * correlated subquery instead (PostgreSQL plans that form as a scan of the whole table). `where` and
 * `orderBy` name the table's rows by the alias they are given.
 */
export function joinFirstRows(
  db: Db,
  spec: {
    readonly table: string;
    readonly alias: string;
    readonly where: (row: string) => RawBuilder<unknown>;
    readonly orderBy: (row: string) => RawBuilder<unknown>;
    readonly limit: number;
  },
): RawBuilder<unknown> {
  const inner = `${spec.alias}_first`;
  const rows = sql`from ${sql.table(spec.table)} as ${sql.table(inner)} where ${spec.where(inner)} order by ${spec.orderBy(inner)} limit ${sql.lit(spec.limit)}`;
  if (dialectOf(db) === 'postgres') return sql`cross join lateral (select ${sql.table(inner)}.* ${rows}) as ${sql.table(spec.alias)}`;
  return sql`join ${sql.table(spec.table)} as ${sql.table(spec.alias)} on ${sql.ref(`${spec.alias}.id`)} in (select ${sql.ref(`${inner}.id`)} ${rows})`;
}

/**
 * The column in a condition that SQLite must not serve from an index (`+column`, SQLite's documented way), so
 * that another index of the query drives it; plain on PostgreSQL, whose planner weighs the indexes by their
 * statistics. SQLite, with none gathered, takes a range of one index (a time span) for narrower than an
 * equality on another (one number's calls).
 */
export function notByIndex(db: Db, column: string): RawBuilder<unknown> {
  return dialectOf(db) === 'postgres' ? sql`${sql.ref(column)}` : sql`+${sql.ref(column)}`;
}
