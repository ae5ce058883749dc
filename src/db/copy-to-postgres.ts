/**
 * Copies a SQLite database into an empty PostgreSQL database (`callgate copy-data`), the way from one machine
 * to N processes. Both dialects store the same shapes (schema.ts: ids and timestamps as text, JSON as text,
 * booleans and counts as integers; no serial or identity column), so every value is copied as read. The target
 * is migrated first, then filled in one transaction: a copy that fails anywhere leaves it migrated and empty,
 * which the next run accepts. The source is read in one SQLite read transaction (one snapshot).
 */
import fs from 'node:fs';
import { type Kysely, sql } from 'kysely';
import { type DatabaseHandle, type Db, migrateToLatest, migrationState, openDatabase } from './database.js';
import type { Database } from './schema.js';

type TableName = keyof Database;

/** What of a table is copied: every row, the rows not yet expired (`expires_at`), or none. */
type TablePolicy = { readonly keep: 'all' } | { readonly keep: 'unexpired' | 'none'; readonly leftOut: string };

const all = { keep: 'all' } as const;

/**
 * Every table, in the order copied: a table after those its foreign keys name, since PostgreSQL checks each
 * row as it is inserted. `satisfies` makes a table added to schema.ts without an entry here a type error.
 * Rows are left out only where they mean nothing any more: the server ignores them and would purge them.
 */
export const copyPlan = {
  accounts: all,
  users: all,
  portal_sessions: { keep: 'unexpired', leftOut: 'expired portal sessions (they sign no one in)' },
  portal_form_tokens: all,
  api_keys: all,
  agents: all,
  webhook_endpoints: all,
  webhook_endpoint_backoffs: all,
  suppressions: all,
  calls: all,
  call_content: all,
  dials: all,
  held_outcomes: all,
  call_slots: { keep: 'unexpired', leftOut: 'expired concurrency slots (they no longer count)' },
  idempotency_keys: { keep: 'unexpired', leftOut: 'expired idempotency records (past their 24 hours, never replayed)' },
  batches: all,
  batch_recipients: all,
  webhook_events: all,
  webhook_deliveries: all,
  webhook_attempts: all,
  request_logs: all,
  request_latency_hourly: all,
  webhook_workers: { keep: 'none', leftOut: "the old server's delivery workers (new processes register their own)" },
} as const satisfies Record<TableName, TablePolicy>;

const copyTables = Object.keys(copyPlan) as TableName[];

/**
 * Rows a statement. Each chunk goes as one JSON parameter that PostgreSQL turns into rows
 * (`json_populate_recordset`): per row and column that is a fraction of the client's work of binding one
 * parameter each (which took 35 s of CPU a million rows here), and no limit of 65,535 parameters applies.
 */
const maxRowsPerStatement = 5_000;
/** A chunk is also sent once its text reaches this size: request logs and call content carry bodies. */
const maxChunkChars = 8 * 1024 * 1024;
/** Progress of a big table at most this often, and once at its end. */
const progressIntervalMs = 1_000;

/** The copy was refused before anything was written; the message says why and what to do. */
export class CopyRefusedError extends Error {
  override readonly name = 'CopyRefusedError';
}

export interface TableCopy {
  readonly table: TableName;
  /** Rows in the source. */
  readonly sourceRows: number;
  /** Rows written to the target, counted there again before the commit. */
  readonly copiedRows: number;
  /** Source rows not copied, and why (null when every row was). */
  readonly leftOutRows: number;
  readonly leftOutReason: string | null;
}

export interface CopyResult {
  /** The last migration, the same on both sides. */
  readonly schemaVersion: string;
  /** Migrations applied to the target by this copy (none when it was migrated already). */
  readonly appliedToTarget: readonly string[];
  readonly tables: readonly TableCopy[];
}

export interface CopyOptions {
  readonly sourceFile: string;
  readonly targetUrl: string;
  /** Rows expiring at or before this ISO time are not copied (policy `unexpired`). */
  readonly now: string;
  /** Rows of `table` copied so far of `total`, at a table's start, every second or so, and at its end. */
  readonly progress: (table: TableName, copied: number, total: number) => void;
  /** What the copy is doing between tables (migrating, analyzing). */
  readonly step: (line: string) => void;
}

// The copy names its tables at run time, which Kysely's types cannot follow: the plan above keeps them right.
// biome-ignore lint/suspicious/noExplicitAny: dynamic table names
type AnyDb = Kysely<any>;

function keptRows(db: AnyDb, table: TableName, now: string) {
  const policy: TablePolicy = copyPlan[table];
  const query = db.selectFrom(table);
  if (policy.keep === 'none') return query.where(sql<boolean>`false`);
  if (policy.keep === 'unexpired') return query.where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]));
  return query;
}

async function countOf(query: ReturnType<typeof keptRows>): Promise<number> {
  const row = await query.select((eb) => eb.fn.countAll<string | number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

async function tablesPresent(db: Db): Promise<TableName[]> {
  const { rows } = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
     where table_schema = current_schema() and table_name in (${sql.join(copyTables)})`.execute(db);
  const names = new Set(rows.map((row) => row.name));
  return copyTables.filter((table) => names.has(table));
}

/** The callgate tables of the target that hold a row (one `exists` each, so a big table costs nothing). */
async function occupiedTables(db: Db, tables: readonly TableName[]): Promise<TableName[]> {
  const occupied: TableName[] = [];
  for (const table of tables) {
    const { rows } = await sql<{ found: boolean }>`select exists (select 1 from ${sql.table(table)}) as found`.execute(db);
    if (rows[0]?.found) occupied.push(table);
  }
  return occupied;
}

function notEmpty(occupied: readonly TableName[]): CopyRefusedError {
  return new CopyRefusedError(
    `the target database is not empty (rows in ${occupied.join(', ')}): copy-data fills an empty database only and never merges into one. Give it a new database (createdb, or your provider's console), or drop and recreate this one if nothing in it is needed, then run copy-data again. A database that is only migrated (\`callgate migrate\`, or a copy that failed and rolled back) counts as empty`,
  );
}

/** Refuses a source that is not fully migrated by this version of callgate. */
async function checkSource(source: Db): Promise<string> {
  const state = await migrationState(source);
  if (state.unknown.length > 0) {
    throw new CopyRefusedError(
      `the SQLite database was migrated by a newer version of callgate (${state.unknown.join(', ')}): run copy-data from that version`,
    );
  }
  if (state.pending.length > 0 || state.applied.length === 0) {
    throw new CopyRefusedError(
      `the SQLite database is behind this version of callgate (pending migrations: ${state.pending.join(', ')}): run \`callgate migrate\` with the same settings first, then copy-data again`,
    );
  }
  return state.applied[state.applied.length - 1]!;
}

/** Refuses a target that holds data or another version's schema; nothing is written to it before this passes. */
async function checkTarget(target: Db): Promise<void> {
  const state = await migrationState(target);
  if (state.unknown.length > 0) {
    throw new CopyRefusedError(
      `the target database was migrated by a newer version of callgate (${state.unknown.join(', ')}): copy with that version, or give copy-data a new, empty database`,
    );
  }
  const present = await tablesPresent(target);
  if (state.applied.length === 0 && present.length > 0) {
    throw new CopyRefusedError(
      `the target database has tables named as callgate's (${present.join(', ')}) but no record of callgate's migrations: give copy-data a new, empty database`,
    );
  }
  const occupied = await occupiedTables(target, present);
  if (occupied.length > 0) throw notEmpty(occupied);
}

/**
 * Inserts `rows` a chunk at a time, bounded in rows and in size; calls `sent` after each chunk. JSON keeps every
 * value as it was read: text exactly (a character PostgreSQL's text refuses, NUL, fails the copy), integers as
 * integers, null as null; the row type of the table itself maps the fields to its columns by name.
 */
async function insertStream(
  target: Db,
  table: TableName,
  rows: AsyncIterable<Record<string, unknown>>,
  sent: (count: number) => void,
): Promise<void> {
  let chunk: Record<string, unknown>[] = [];
  let chunkChars = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    const json = JSON.stringify(chunk);
    await sql`insert into ${sql.table(table)} select * from json_populate_recordset(null::${sql.table(table)}, ${json}::json)`.execute(
      target,
    );
    sent(chunk.length);
    chunk = [];
    chunkChars = 0;
  };
  for await (const row of rows) {
    chunk.push(row);
    for (const value of Object.values(row)) if (typeof value === 'string') chunkChars += value.length;
    if (chunk.length >= maxRowsPerStatement || chunkChars >= maxChunkChars) await flush();
  }
  await flush();
}

async function copyTable(source: AnyDb, target: AnyDb, table: TableName, options: CopyOptions): Promise<TableCopy> {
  const sourceRows = await countOf(source.selectFrom(table));
  const kept = await countOf(keptRows(source, table, options.now));
  let copied = 0;
  let reportedAt = Date.now();
  if (kept > 0) options.progress(table, 0, kept);
  // better-sqlite3 reads row by row from one statement (bounded memory); the chunks bound what is held here.
  const rows = keptRows(source, table, options.now).selectAll().stream();
  try {
    await insertStream(target as Db, table, rows, (count) => {
      copied += count;
      if (Date.now() - reportedAt >= progressIntervalMs && copied < kept) {
        reportedAt = Date.now();
        options.progress(table, copied, kept);
      }
    });
  } catch (error) {
    throw new Error(`copying ${table} failed after ${copied} of ${kept} rows: ${(error as Error).message}`, { cause: error });
  }
  const written = await countOf(target.selectFrom(table));
  if (written !== kept || copied !== kept) {
    throw new Error(`copying ${table}: the source has ${kept} rows to copy but the target counts ${written}`);
  }
  options.progress(table, written, kept);
  const policy: TablePolicy = copyPlan[table];
  return {
    table,
    sourceRows,
    copiedRows: written,
    leftOutRows: sourceRows - kept,
    leftOutReason: policy.keep === 'all' ? null : policy.leftOut,
  };
}

/**
 * Moves a serial or identity column's sequence past the copied ids. callgate's schema has none today (its ids
 * are text it makes itself); this keeps a copy right should a migration add one.
 */
async function advanceSequences(target: Db): Promise<void> {
  const { rows } = await sql<{ table_name: string; column_name: string; sequence: string }>`
    select table_name, column_name, pg_get_serial_sequence(quote_ident(table_name), column_name) as sequence
      from information_schema.columns
     where table_schema = current_schema() and table_name in (${sql.join(copyTables)})
       and pg_get_serial_sequence(quote_ident(table_name), column_name) is not null`.execute(target);
  for (const row of rows) {
    await sql`select setval(${row.sequence}, coalesce((select max(${sql.ref(row.column_name)}) from ${sql.table(row.table_name)}), 0) + 1, false)`.execute(
      target,
    );
  }
}

function openTarget(url: string): DatabaseHandle & { readonly dialect: 'postgres' } {
  const handle = openDatabase({ dialect: 'postgres', url });
  if (handle.dialect !== 'postgres') throw new Error('unreachable: a postgres handle');
  return handle;
}

export async function copyToPostgres(options: CopyOptions): Promise<CopyResult> {
  if (!fs.existsSync(options.sourceFile)) {
    throw new CopyRefusedError(`there is no SQLite database at ${options.sourceFile}: give copy-data the server's CALLGATE_DATA_DIR`);
  }
  const source = openDatabase({ dialect: 'sqlite', file: options.sourceFile });
  const target = openTarget(options.targetUrl);
  try {
    const schemaVersion = await checkSource(source.db);
    await checkTarget(target.db).catch((error: unknown) => {
      if (error instanceof CopyRefusedError) throw error;
      const missing = (error as { code?: string }).code === '3D000' ? " (create it first: createdb, or your provider's console)" : '';
      throw new CopyRefusedError(`cannot open the target database: ${(error as Error).message}${missing}`);
    });
    options.step('Migrating the target database…');
    const appliedToTarget = await migrateToLatest(target.db);
    const tables = await source.db.transaction().execute((sourceTrx) =>
      target.db.transaction().execute(async (targetTrx) => {
        // Until the commit no other process writes to these tables (a server started on the target too early
        // waits), and the check of emptiness below cannot be overtaken.
        await sql`lock table ${sql.join(copyTables.map((table) => sql.table(table)))} in exclusive mode`.execute(targetTrx);
        const occupied = await occupiedTables(targetTrx, copyTables);
        if (occupied.length > 0) throw notEmpty(occupied);
        const copies: TableCopy[] = [];
        for (const table of copyTables) copies.push(await copyTable(sourceTrx as AnyDb, targetTrx as AnyDb, table, options));
        await advanceSequences(targetTrx);
        return copies;
      }),
    );
    // Fresh statistics for the planner: autovacuum would take a while to notice millions of new rows.
    options.step('Analyzing the copied tables…');
    await sql`analyze ${sql.join(copyTables.map((table) => sql.table(table)))}`.execute(target.db);
    return { schemaVersion, appliedToTarget, tables };
  } finally {
    await target.destroy();
    await source.destroy();
  }
}
