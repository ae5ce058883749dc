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
