/**
 * Opens the one database of a process: a SQLite file (WAL mode) by default, or PostgreSQL when
 * DATABASE_URL is set. Everything above this module speaks Kysely and does not care which.
 */
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import {
  Kysely,
  Migrator,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  sql,
  type Migration,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import pg from 'pg';
import type { DatabaseConfig } from '../config.js';
import * as initial from './migrations/0001-initial.js';
import * as webhooks from './migrations/0002-webhooks.js';
import * as agentPhoneProvider from './migrations/0003-agent-phone-provider.js';
import * as requestLogs from './migrations/0004-request-logs.js';
import * as portal from './migrations/0005-portal.js';
import * as portalFormTokens from './migrations/0006-portal-form-tokens.js';
import * as callsByCreation from './migrations/0007-calls-by-creation.js';
import * as agentPhoneNumber from './migrations/0008-agent-phone-number.js';
import * as batches from './migrations/0009-batches.js';
import * as batchWindowsRetries from './migrations/0010-batch-windows-retries.js';
import * as suppressions from './migrations/0011-suppressions.js';
import * as accountConcurrency from './migrations/0012-account-concurrency.js';
import * as eventRetention from './migrations/0013-event-retention.js';
import * as eventsApi from './migrations/0014-events-api.js';
import * as requestLogBodies from './migrations/0015-request-log-bodies.js';
import * as growthIndexes from './migrations/0016-growth-indexes.js';
import * as overviewCharts from './migrations/0017-overview-charts.js';
import * as dials from './migrations/0018-dials.js';
import * as requestLogReplays from './migrations/0019-request-log-replays.js';
import * as webhookFairness from './migrations/0020-webhook-fairness.js';
import * as providerAgents from './migrations/0021-provider-agents.js';
import * as webhookWorkers from './migrations/0022-webhook-workers.js';
import * as callContent from './migrations/0023-call-content.js';
import * as endpointModes from './migrations/0024-endpoint-modes.js';
import * as callFilters from './migrations/0025-call-filters.js';
import * as callCancel from './migrations/0026-call-cancel.js';
import type { Database } from './schema.js';
import { startCheckpointer } from './sqlite-checkpointer.js';

export type Db = Kysely<Database>;

export type DatabaseHandle =
  | { readonly dialect: 'sqlite'; readonly db: Db; readonly sqlite: BetterSqlite3.Database; destroy(): Promise<void> }
  | {
      readonly dialect: 'postgres';
      readonly db: Db;
      readonly pool: pg.Pool;
      /** For counters only (the rate limiters): its commits do not wait for the disk, see `counterPoolSize`. */
      readonly counterPool: pg.Pool;
      destroy(): Promise<void>;
    };

/**
 * The dialect behind a Kysely instance or transaction, for the few statements written per dialect (a
 * repository given only `db` asks here rather than having it threaded through every caller).
 */
export function dialectOf(db: Db): 'sqlite' | 'postgres' {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** Pool size per process; several processes share one PostgreSQL server, so keep it modest. */
const postgresPoolSize = 10;

/**
 * Connections of the second pool, the rate limiters' (`counterPool`). Its sessions run with
 * `synchronous_commit = off`: a commit returns once it is in PostgreSQL's WAL buffers, without waiting for
 * the fsync, which is most of what a commit costs and was one of the three a created call waited for. A
 * crash of the database server (not of ours) can then lose the counts of its last few hundred ms, never
 * more, and never leaves the table inconsistent; a limit may let through that many more requests once
 * after such a crash, which protects nothing worth an fsync per request. Everything that must survive a
 * crash (an idempotency claim, a call, an event) commits through the main pool, which waits for the disk.
 */
const counterPoolSize = 4;

/** How long a new PostgreSQL connection may take before the query waiting for it fails. */
const postgresConnectTimeoutMs = 5_000;

/** Distinct SQL texts kept prepared; queries built with `in (…)` lists vary, so the cache is bounded. */
const statementCacheSize = 500;

/**
 * SQLite's page cache for the connection, in KiB when negative (4 MB). better-sqlite3 builds SQLite with 16 MB
 * (SQLITE_DEFAULT_CACHE_SIZE=-16000), which under the bench's load filled to hold 12 MB more of the server's RSS
 * than this; a page it no longer holds is read again from the OS's file cache (a pread, a few µs), and in a loop of
 * the bench's writes (random keys into 45 MB of tables) the CPU per write was the same with either size.
 * mmap_size stays 0: mapped pages would count in RSS too.
 */
const sqliteCacheSize = -4000;

/** better-sqlite3's statements, each distinct SQL text prepared once (see `withStatementCache`). */
function statementCache(sqlite: BetterSqlite3.Database): (sql: string) => BetterSqlite3.Statement {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return (sql) => {
    const cached = cache.get(sql);
    if (cached) return cached;
    const statement = sqlite.prepare(sql);
    if (cache.size >= statementCacheSize) cache.delete(cache.keys().next().value as string);
    cache.set(sql, statement);
    return statement;
  };
}

/**
 * better-sqlite3 as Kysely sees it, but preparing each distinct SQL text once: Kysely asks for a new
 * statement on every query, and SQLite's parse-and-plan was a sixth of the CPU time of a created call.
 * Kysely runs one query at a time on this connection and reads results with `all` or `run`, so a cached
 * statement is never in use twice at once; streamed queries (`iterate`) get a statement of their own.
 */
function withStatementCache(sqlite: BetterSqlite3.Database, prepare: (sql: string) => BetterSqlite3.Statement): SqliteDatabase {
  return {
    close: () => sqlite.close(),
    prepare(sql: string): SqliteStatement {
      const statement = prepare(sql);
      // SQLite rolls a transaction back by itself when a write fails with SQLITE_FULL or an I/O error; Kysely's
      // own ROLLBACK then fails ("no transaction is active") and hides the real error (a full disk) behind a 500.
      const isRollback = /^\s*rollback\s*$/i.test(sql);
      return {
        reader: statement.reader,
        all: (parameters) => statement.all(parameters),
        run: (parameters) => (isRollback && !sqlite.inTransaction ? { changes: 0, lastInsertRowid: 0 } : statement.run(parameters)),
        iterate: (parameters) => sqlite.prepare(sql).iterate(parameters) as IterableIterator<unknown>,
      };
    },
  };
}

export interface OpenOptions {
  /**
   * SQLite only: checkpoint the WAL from a worker thread instead of inside commits (sqlite-checkpointer.ts).
   * For the long-running server; a short CLI command keeps SQLite's default.
   */
  readonly backgroundCheckpoints?: boolean;
  /** Told when the checkpoint thread failed and the connection went back to checkpointing by itself. */
  readonly onCheckpointerError?: (error: Error) => void;
}

export function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): DatabaseHandle {
  if (config.dialect === 'sqlite') {
    fs.mkdirSync(path.dirname(config.file), { recursive: true });
    const sqlite = new BetterSqlite3(config.file);
    sqlite.pragma('journal_mode = WAL');
    // NORMAL is durable across process crashes in WAL mode (only an OS crash can lose the last commits).
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    // The CLI and the server may write at the same moment; wait for the lock instead of failing.
    sqlite.pragma('busy_timeout = 5000');
    sqlite.pragma(`cache_size = ${sqliteCacheSize}`);
    const prepare = statementCache(sqlite);
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite, prepare) }) });
    const checkpointer = options.backgroundCheckpoints
      ? startCheckpointer(sqlite, options.onCheckpointerError ? { onError: options.onCheckpointerError } : {})
      : undefined;
    return {
      dialect: 'sqlite',
      db,
      sqlite,
      async destroy() {
        await checkpointer?.stop();
        await db.destroy();
      },
    };
  }
  const pool = postgresPool(config.url, postgresPoolSize);
  pool.on('connect', prepareRepeatedStatements);
  const counterPool = postgresPool(config.url, counterPoolSize, '-c synchronous_commit=off');
  const db = postgresDb(pool);
  return {
    dialect: 'postgres',
    db,
    pool,
    counterPool,
    async destroy() {
      await db.destroy();
      await counterPool.end();
    },
  };
}

/**
 * Distinct SQL texts run as named prepared statements, as SQLite's are (`statementCache`): PostgreSQL then
 * parses and plans each once per connection instead of on every run, which was a third of its CPU time per
 * created call (each created call runs 15 statements). The names are shared by the pool's connections and
 * bounded, since PostgreSQL keeps a connection's statements until it closes: a text is named once it has
 * run a few times (statements whose `in (…)` lists vary are rarely the same text twice), and past the
 * bound new texts run unnamed.
 */
const preparedStatementBound = 300;
const runsBeforePreparing = 3;
const statementNames = new Map<string, string>();
const statementRuns = new Map<string, number>();

function statementName(text: string): string | undefined {
  const name = statementNames.get(text);
  if (name !== undefined || statementNames.size >= preparedStatementBound) return name;
  const runs = (statementRuns.get(text) ?? 0) + 1;
  if (runs < runsBeforePreparing) {
    if (statementRuns.size < preparedStatementBound * 10) statementRuns.set(text, runs);
    return undefined;
  }
  statementRuns.delete(text);
  const named = `callgate_${statementNames.size + 1}`;
  statementNames.set(text, named);
  return named;
}

type QueryFunction = (config: unknown, values?: unknown, callback?: unknown) => unknown;

/**
 * Runs the client's parameterized queries (Kysely's) as named prepared statements. A statement whose result
 * columns changed under it (a migration of a newer version adding a column while this process runs: "cached
 * plan must not change result type") runs unnamed on that connection from then on.
 */
function prepareRepeatedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as QueryFunction;
  const unnamed = new Set<string>();
  (client as unknown as { query: QueryFunction }).query = (config, values, callback) => {
    if (typeof config !== 'string' || !Array.isArray(values) || values.length === 0 || unnamed.has(config)) {
      return query(config, values, callback);
    }
    const name = statementName(config);
    if (name === undefined) return query(config, values, callback);
    const named = query({ name, text: config, values }, callback) as Promise<unknown> | undefined;
    return named?.catch((error: unknown) => {
      if ((error as { code?: string }).code !== '0A000') throw error;
      unnamed.add(config);
      // Outside a transaction the failed statement did nothing: it runs again, unnamed. Inside one, the
      // transaction is aborted and fails as a whole (its caller sees a database error, once).
      if (client.getTransactionStatus() === 'I') return query(config, values);
      throw error;
    });
  };
}

/** Kysely on `pool`. */
function postgresDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** A pool of `max` connections (made when first needed), with server settings `options` for each session. */
function postgresPool(url: string, max: number, options?: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    ...(options === undefined ? {} : { options }),
    // While the server is unreachable a request fails within this time (503 database_unavailable) instead of hanging.
    connectionTimeoutMillis: postgresConnectTimeoutMs,
    // A connection that went silent (a dead peer, a dropped NAT entry) is noticed by TCP keepalives.
    keepAlive: true,
  });
  // A lost connection must never kill the process. pg-pool listens for errors of idle clients only (below);
  // a client that is checked out (a Kysely query or transaction under way) emits 'error' with no listener,
  // which Node turns into an uncaught exception. Its query fails by itself (503 to the request), and the
  // pool drops the client when it is released, since it is no longer queryable.
  pool.on('connect', (client) => client.on('error', () => undefined));
  pool.on('error', () => undefined);
  return pool;
}

const migrations: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-webhooks': webhooks,
  '0003-agent-phone-provider': agentPhoneProvider,
  '0004-request-logs': requestLogs,
  '0005-portal': portal,
  '0006-portal-form-tokens': portalFormTokens,
  '0007-calls-by-creation': callsByCreation,
  '0008-agent-phone-number': agentPhoneNumber,
  '0009-batches': batches,
  '0010-batch-windows-retries': batchWindowsRetries,
  '0011-suppressions': suppressions,
  '0012-account-concurrency': accountConcurrency,
  '0013-event-retention': eventRetention,
  '0014-events-api': eventsApi,
  '0015-request-log-bodies': requestLogBodies,
  '0016-growth-indexes': growthIndexes,
  '0017-overview-charts': overviewCharts,
  '0018-dials': dials,
  '0019-request-log-replays': requestLogReplays,
  '0020-webhook-fairness': webhookFairness,
  '0021-provider-agents': providerAgents,
  '0022-webhook-workers': webhookWorkers,
  '0023-call-content': callContent,
  '0024-endpoint-modes': endpointModes,
  '0025-call-filters': callFilters,
  '0026-call-cancel': callCancel,
};

/** Kysely's record of the migrations applied to a database. */
const migrationTable = 'kysely_migration';

export interface MigrationState {
  /** Applied migrations, in the order they were applied. */
  readonly applied: readonly string[];
  /** Migrations of this code not yet applied. */
  readonly pending: readonly string[];
  /** Applied migrations this code does not know: a newer version of callgate migrated the database. */
  readonly unknown: readonly string[];
}

/**
 * Where the database stands against this code's migrations. Reads only: the migration table is not made
 * when missing (a new database has every migration pending).
 */
export async function migrationState(db: Db): Promise<MigrationState> {
  const exists =
    dialectOf(db) === 'postgres'
      ? (await sql<{ found: string | null }>`select to_regclass(${migrationTable}) as found`.execute(db)).rows[0]?.found != null
      : (await sql`select name from sqlite_master where type = 'table' and name = ${migrationTable}`.execute(db)).rows.length > 0;
  const applied = exists
    ? (await sql<{ name: string }>`select name from ${sql.table(migrationTable)} order by timestamp, name`.execute(db)).rows.map(
        (row) => row.name,
      )
    : [];
  const known = Object.keys(migrations);
  return {
    applied,
    pending: known.filter((name) => !applied.includes(name)),
    unknown: applied.filter((name) => !(name in migrations)),
  };
}

/** The database cannot be used by this code as it stands; the message says what to do. */
export class SchemaMismatchError extends Error {
  override readonly name = 'SchemaMismatchError';
}

function newerThanCode(unknown: readonly string[]): SchemaMismatchError {
  return new SchemaMismatchError(
    `the database was migrated by a newer version of callgate (it has migration${unknown.length === 1 ? '' : 's'} ${unknown.join(', ')}, which this version does not know); run that version or a newer one, or restore a backup taken before the upgrade`,
  );
}

/**
 * The one check every process makes before using the database (server start, CLI commands): refuses a
 * database migrated by a newer version, then either applies the pending migrations (`migrate`, the
 * default, CALLGATE_MIGRATE_ON_START) or refuses a database that is behind, so that a rolling deploy
 * runs `callgate migrate` once and no process ever runs against a schema it was not written for.
 */
export async function prepareSchema(db: Db, options: { readonly migrate: boolean }): Promise<void> {
  const state = await migrationState(db);
  if (state.unknown.length > 0) throw newerThanCode(state.unknown);
  if (options.migrate) {
    await migrateToLatest(db);
    return;
  }
  if (state.pending.length > 0) {
    throw new SchemaMismatchError(
      `the database is behind this version of callgate (pending migration${state.pending.length === 1 ? '' : 's'}: ${state.pending.join(', ')}) and CALLGATE_MIGRATE_ON_START is false: run \`npx callgate migrate\` first, then start again`,
    );
  }
}

/**
 * Applies every pending migration and returns the names it applied (none when up to date); safe to run from several processes at once. On PostgreSQL Kysely takes
 * a lock. On SQLite its lock is per connection only, so two processes opening a new file together can race:
 * each migration runs in a transaction, the loser's fails, and trying again finds the work done.
 */
export async function migrateToLatest(db: Db, attempts = 5): Promise<string[]> {
  const unknown = (await migrationState(db)).unknown;
  if (unknown.length > 0) throw newerThanCode(unknown);
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const applied: string[] = [];
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    for (const result of results ?? []) if (result.status === 'Success') applied.push(result.migrationName);
    const failed = results?.find((result) => result.status === 'Error');
    if (!error && !failed) return applied;
    if (attempt < attempts) {
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      continue;
    }
    const reason = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
    throw new Error(`database migration failed: ${reason}`, { cause: error });
  }
}
