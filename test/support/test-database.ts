/**
 * Each test suite gets a database of its own: a fresh SQLite file, or a fresh PostgreSQL database made on
 * the server at CALLGATE_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) and
 * dropped afterwards. Asked for a migrated one, it gets a copy of a template migrated once per set of
 * migrations (a file in the temporary folder; a template database on the server), instead of running
 * every migration for each of the few hundred databases of a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import { repoRoot } from './repo-root.js';

export type Dialect = 'sqlite' | 'postgres';
export const dialects: readonly Dialect[] = ['sqlite', 'postgres'];

export const postgresAdminUrl = process.env.CALLGATE_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let postgresProbe: Promise<string | null> | undefined;

/** Null when PostgreSQL answers, else the reason it does not (used as the skip reason). */
export function postgresUnavailableReason(): Promise<string | null> {
  postgresProbe ??= (async () => {
    // A server that is down refuses at once; a slow answer is a busy machine (two test files at a time and
    // their servers), which must not turn into a failed run.
    const client = new pg.Client({ connectionString: postgresAdminUrl, connectionTimeoutMillis: 60_000 });
    try {
      await client.connect();
      await client.query('select 1');
      return null;
    } catch (error) {
      return `PostgreSQL is not reachable at ${postgresAdminUrl.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message})`;
    } finally {
      await client.end().catch(() => undefined);
    }
  })();
  return postgresProbe;
}

export interface TestDatabase {
  readonly dialect: Dialect;
  readonly config: DatabaseConfig;
  /** Environment that points a child process at this database. */
  readonly env: Record<string, string>;
  drop(): Promise<void>;
}

function postgresUrlFor(database: string): string {
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** The migrations' contents: a template made from other migrations is never used. */
const migrationsHash = (() => {
  const dir = path.join(repoRoot, 'src/db/migrations');
  const hash = createHash('sha256');
  for (const name of fs.readdirSync(dir).sort()) hash.update(name).update(fs.readFileSync(path.join(dir, name)));
  return hash.digest('hex').slice(0, 12);
})();

let sqliteTemplate: Promise<string> | undefined;
let postgresTemplate: Promise<string> | undefined;

/** A migrated SQLite file, made once (a run's processes may each make it; the last rename wins, all equal). */
function sqliteTemplateFile(): Promise<string> {
  sqliteTemplate ??= (async () => {
    const file = path.join(os.tmpdir(), `callgate-test-template-${migrationsHash}.sqlite`);
    if (fs.existsSync(file)) return file;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-template-'));
    const building = path.join(dir, 'callgate.sqlite');
    const handle = openDatabase({ dialect: 'sqlite', file: building });
    try {
      await migrateToLatest(handle.db);
    } finally {
      // Closing the last connection folds the WAL into the file: the file alone is the whole database.
      await handle.destroy();
    }
    fs.renameSync(building, file);
    fs.rmSync(dir, { recursive: true, force: true });
    return file;
  })();
  return sqliteTemplate;
}

/** PostgreSQL refuses to copy or rename a database while a closed pool's sessions are still ending. */
async function whileInUse(query: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await query();
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55006' || attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A template's comment: when it was made, so that another checkout's run drops it only once it is old. */
const templateCommentPrefix = 'callgate test template made at ';
const staleTemplateMs = 24 * 60 * 60 * 1000;

/** The name of a migrated template database on the server, made by the first process that needs it. */
function postgresTemplateName(): Promise<string> {
  postgresTemplate ??= (async () => {
    const name = `callgate_test_template_${migrationsHash}`;
    const admin = new pg.Client({ connectionString: postgresAdminUrl });
    await admin.connect();
    try {
      // One builder at a time across the run's processes; the others find it made.
      await admin.query('select pg_advisory_lock(hashtext($1))', [name]);
      const made = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (made.rowCount === 0) {
        const building = `${name}_${randomBytes(4).toString('hex')}`;
        await admin.query(`create database ${building}`);
        const handle = openDatabase({ dialect: 'postgres', url: postgresUrlFor(building) });
        try {
          await migrateToLatest(handle.db);
        } finally {
          await handle.destroy();
        }
        await whileInUse(() => admin.query(`alter database ${building} rename to ${name}`));
        await admin.query(`comment on database ${name} is '${templateCommentPrefix}${Date.now()}'`);
        // Templates of other sets of migrations (older checkouts) are no test's any more: one is kept, not one a
        // set. One made within the day may be another checkout's run under way (its migrations differ): it stays,
        // and so does one being built (a suffix after its hash).
        const stale = await admin.query<{ datname: string }>(
          `select datname from pg_database
            where datname ~ '^callgate_test_template_[0-9a-f]{12}$' and datname <> $1
              and coalesce(substring(shobj_description(oid, 'pg_database') from $2)::bigint, 0) < $3`,
          [name, `^${templateCommentPrefix}([0-9]+)$`, Date.now() - staleTemplateMs],
        );
        // A template another run is copying or building is in use: it stays, and goes with a later run.
        for (const { datname } of stale.rows) await admin.query(`drop database if exists ${datname}`).catch(() => undefined);
      }
    } finally {
      await admin.end();
    }
    return name;
  })();
  return postgresTemplate;
}

export async function createTestDatabase(dialect: Dialect, options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-test-'));
    const file = path.join(dir, 'callgate.sqlite');
    if (options.migrated) fs.copyFileSync(await sqliteTemplateFile(), file);
    return {
      dialect,
      config: { dialect: 'sqlite', file },
      env: { CALLGATE_DATA_DIR: dir },
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  const name = `callgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresAdminUrl });
  await admin.connect();
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        const template = options.migrated ? await postgresTemplateName() : undefined;
        await whileInUse(() => admin.query(template ? `create database ${name} template ${template}` : `create database ${name}`));
        break;
      } catch (error) {
        // Another checkout's run (other migrations) dropped this run's template as stale: it is made again.
        if ((error as { code?: string }).code !== '3D000' || attempt >= 5) throw error;
        postgresTemplate = undefined;
      }
    }
  } finally {
    await admin.end();
  }
  const url = postgresUrlFor(name);
  return {
    dialect,
    config: { dialect: 'postgres', url },
    env: { DATABASE_URL: url },
    async drop() {
      const client = new pg.Client({ connectionString: postgresAdminUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Ends a test's own pool on a test database and resolves once its connections have closed. pg-pool's end()
 * resolves as soon as it has asked each connection to close: a `drop database … with (force)` right after
 * (the test app's close) then terminates a connection still closing, whose error (57P01) the pool emits as
 * 'error', an uncaught exception where nothing listens (23 of 30 drops right after end() in a loop).
 */
export async function endPool(pool: pg.Pool): Promise<void> {
  let open = pool.totalCount;
  const closed = new Promise<void>((resolve) => {
    if (open === 0) resolve();
    // 'remove' comes once a connection has ended, also for one ended while ending the pool.
    pool.on('remove', () => {
      if (--open <= 0) resolve();
    });
  });
  await pool.end();
  await closed;
}
