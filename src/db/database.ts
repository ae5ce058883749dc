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
import * as eventsApi from './migrations/0012-events-api.js';
import * as requestLogBodies from './migrations/0013-request-log-bodies.js';
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
 * better-sqlite3 as Kysely sees it, but preparing each distinct SQL text once: Kysely asks for a new
 * statement on every query, and SQLite's parse-and-plan was a sixth of the CPU time of a created call.
 * Kysely runs one query at a time on this connection and reads results with `all` or `run`, so a cached
 * statement is never in use twice at once; streamed queries (`iterate`) get a statement of their own.
 */
function withStatementCache(sqlite: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  const prepare = (sql: string): BetterSqlite3.Statement => {
    const cached = cache.get(sql);
    if (cached) return cached;
    const statement = sqlite.prepare(sql);
    if (cache.size >= statementCacheSize) cache.delete(cache.keys().next().value as string);
    cache.set(sql, statement);
    return statement;
  };
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
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
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
  const counterPool = postgresPool(config.url, counterPoolSize, '-c synchronous_commit=off');
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
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
  '0012-events-api': eventsApi,
  '0013-request-log-bodies': requestLogBodies,
};

/**
 * Applies every pending migration; safe to run from several processes at once. On PostgreSQL Kysely takes
 * a lock. On SQLite its lock is per connection only, so two processes opening a new file together can race:
 * each migration runs in a transaction, the loser's fails, and trying again finds the work done.
 */
export async function migrateToLatest(db: Db, attempts = 5): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    const failed = results?.find((result) => result.status === 'Error');
    if (!error && !failed) return;
    if (attempt < attempts) {
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
      continue;
    }
    const reason = error instanceof Error ? error.message : String(error ?? failed?.migrationName);
    throw new Error(`database migration failed: ${reason}`, { cause: error });
  }
}
