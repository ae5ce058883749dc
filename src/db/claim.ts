/**
 * The two statements every job's rows go through: a claim of the due rows under a lease, and the results
 * written back for many rows at once. One copy each, for every table a job works on.
 */
import {
  CompiledQuery,
  sql,
  type Expression,
  type ExpressionBuilder,
  type RawBuilder,
  type SqlBool,
  type UpdateObject,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import { dialectOf, type Db } from './database.js';
import type { Database } from './schema.js';

/** The tables jobs claim rows of; each has a text primary key `id`. */
export type JobTable = 'calls' | 'webhook_deliveries' | 'batch_recipients' | 'dials';

export interface ClaimSpec<T extends JobTable> {
  readonly table: T;
  /** Which rows are due now (and not under another runner's lease). */
  readonly due: (eb: ExpressionBuilder<Database, T>) => Expression<SqlBool>;
  /** The oldest due first. */
  readonly orderBy: keyof Database[T] & string;
  /** At most this many: a number, or an expression the database works out in the same statement. */
  readonly limit: number | Expression<number>;
  /** What the claim writes: the lease (until when the row is this runner's) and who holds it. */
  readonly set: UpdateObject<Database, T>;
}

/**
 * Claims up to `limit` due rows, as one conditional UPDATE whose subquery picks the rows: on PostgreSQL
 * with FOR UPDATE SKIP LOCKED, so runners never wait for or take each other's rows (and a row changed since
 * the snapshot is tested again once locked); SQLite runs one writer at a time, so the same UPDATE is atomic
 * there. The subquery alone picks the rows: a second test of the due columns on the UPDATE made SQLite's
 * planner walk every due row through its index instead of looking up the ids it got, so each claim cost
 * time in proportion to the backlog (0.7 ms a claim at 20,000 pending deliveries). Returns the builder, for
 * the caller to say what comes back.
 */
export function claimRows<T extends JobTable>(db: Db, spec: ClaimSpec<T>): UpdateQueryBuilder<Database, T, T, UpdateResult> {
  const skipLocked = dialectOf(db) === 'postgres';
  // Kysely's builders do not follow a table name that is a type parameter; the spec's types check the caller.
  const table = spec.table as JobTable;
  return db
    .updateTable(table)
    .set(spec.set as UpdateObject<Database, JobTable>)
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom(table)
        .select('id')
        .where(spec.due as (eb: ExpressionBuilder<Database, JobTable>) => Expression<SqlBool>)
        .orderBy(spec.orderBy as 'id')
        .limit(spec.limit);
      if (skipLocked) due = due.forUpdate().skipLocked();
      return due;
    }) as unknown as UpdateQueryBuilder<Database, T, T, UpdateResult>;
}

export interface JsonUpdateShape {
  readonly table: JobTable;
  /** The fields of each row besides `id`, with their PostgreSQL types (for reading them out of JSON). */
  readonly fields: readonly (readonly [string, 'text' | 'integer'])[];
  /** The columns set, each from the row's field of the same name. */
  readonly columns: readonly string[];
  /** Columns set to one value for every row (a lease ended, a next look cleared). */
  readonly clear?: readonly string[];
  /**
   * A further condition on the row (`t`) and its values (`v`), SQL only: no value of its own (those travel
   * in the rows). `unindexed(column)` is the column as SQLite must not look it up through an index: the list
   * of rows should drive the join, each row found by id.
   */
  readonly where?: (unindexed: (column: string) => RawBuilder<unknown>) => RawBuilder<unknown>;
  readonly returning: 'id' | 'all';
}

/** Runs a `jsonUpdate` with its rows (one object a row: its `id` and a value for each field). */
export type JsonUpdate<Row> = (db: Db, rows: readonly Readonly<Record<string, unknown>>[]) => Promise<Row[]>;

function buildJsonUpdate(dialect: 'sqlite' | 'postgres', shape: JsonUpdateShape, json: string): RawBuilder<unknown> {
  const changes = sql.join([
    ...shape.columns.map((column) => sql`${sql.ref(column)} = v.${sql.ref(column)}`),
    ...(shape.clear ?? []).map((column) => sql`${sql.ref(column)} = null`),
  ]);
  const source =
    dialect === 'postgres'
      ? sql`jsonb_to_recordset(${json}::jsonb) as v(${sql.join([
          sql`id text`,
          ...shape.fields.map(([field, type]) => sql`${sql.ref(field)} ${sql.raw(type)}`),
        ])})`
      : sql`(select ${sql.join(
          ['id', ...shape.fields.map(([field]) => field)].map((field) => sql`value ->> ${sql.lit(`$.${field}`)} as ${sql.ref(field)}`),
        )} from json_each(${json})) as v`;
  const unindexed = (column: string) => (dialect === 'sqlite' ? sql`+t.${sql.ref(column)}` : sql`t.${sql.ref(column)}`);
  const condition = shape.where ? sql`and ${shape.where(unindexed)}` : sql``;
  // SQLite's RETURNING names the updated table's columns unqualified (and has no t.*); PostgreSQL's must
  // qualify them, as v has an id too.
  const returned = shape.returning === 'all' ? (dialect === 'postgres' ? sql`t.*` : sql`*`) : dialect === 'postgres' ? sql`t.id` : sql`id`;
  return sql`update ${sql.table(shape.table)} as t set ${changes}
    from ${source}
    where t.id = v.id ${condition}
    returning ${returned}`;
}

/**
 * Updates many rows, each with its own values, in one statement whatever their number: the rows travel as
 * one JSON parameter and the database reads them back (jsonb_to_recordset on PostgreSQL, json_each on
 * SQLite). A statement per row cost PostgreSQL a round trip each, inside the transaction. Made once per
 * shape (a module's constant): its SQL is built and compiled once per dialect, as building it cost more than
 * running it for a few rows (the call monitor ends a few calls a pass). The returned function gives the rows
 * updated (their ids, or whole), so a caller sees which passed the condition.
 */
export function jsonUpdate<Row>(shape: JsonUpdateShape): JsonUpdate<Row> {
  const compiled = new Map<'sqlite' | 'postgres', string>();
  return async (db, rows) => {
    if (rows.length === 0) return [];
    const dialect = dialectOf(db);
    let text = compiled.get(dialect);
    if (text === undefined) {
      const query = buildJsonUpdate(dialect, shape, '[]').compile(db);
      if (query.parameters.length !== 1) throw new Error(`jsonUpdate(${shape.table}): the condition must be SQL only, without values`);
      text = query.sql;
      compiled.set(dialect, text);
    }
    const result = await db.executeQuery<Row>(CompiledQuery.raw(text, [JSON.stringify(rows)]));
    return result.rows;
  };
}
