/**
 * What every scenario stands on: a database of its own (a SQLite file in a temporary folder, or a PostgreSQL
 * database created and dropped per run), the operator CLI to set an account up, and the server as `npm start`
 * runs it (dist/server.js with package.json's start flags) in a process of its own. Only public interfaces
 * are used (the CLI, HTTP, the environment), so that refactors of src/ do not break the bench.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

export type Dialect = 'sqlite' | 'postgres';

export const root = path.resolve(import.meta.dirname, '..');
export const postgresAdminUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-bench-'));
let databases = 0;

/** A database for one scenario: the server's environment for it, raw SQL on it, and its removal. */
export interface BenchDatabase {
  readonly dialect: Dialect;
  readonly env: Record<string, string>;
  /** Runs statements with the server stopped (bulk loads); SQLite is opened for each call. */
  exec(sql: string): Promise<void>;
  drop(): Promise<void>;
}

export async function createDatabase(dialect: Dialect): Promise<BenchDatabase> {
  const name = `callgate_bench_${process.pid}_${++databases}`;
  if (dialect === 'sqlite') {
    const dir = path.join(runDir, name);
    fs.mkdirSync(dir);
    return {
      dialect,
      env: { CALLGATE_DATA_DIR: dir, DATABASE_URL: '' },
      async exec(sql) {
        const db = new BetterSqlite3(path.join(dir, 'callgate.sqlite'));
        // Room for the indexes a bulk load updates (the default 2 MB cache spills to disk all along).
        db.pragma('cache_size = -262144');
        try {
          db.exec(sql);
        } finally {
          db.close();
        }
      },
      drop: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  await adminQuery(`create database ${name}`);
  const url = new URL(postgresAdminUrl);
  url.pathname = `/${name}`;
  return {
    dialect,
    env: { DATABASE_URL: url.href, CALLGATE_DATA_DIR: runDir },
    exec: (sql) => query(url.href, sql),
    drop: () => adminQuery(`drop database if exists ${name} with (force)`),
  };
}

async function query(connectionString: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

const adminQuery = (sql: string) => query(postgresAdminUrl, sql);

/** Why PostgreSQL cannot be used, or null when it can. */
export async function postgresUnavailable(): Promise<string | null> {
  try {
    await adminQuery('select 1');
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Settings of every server the bench starts: quiet about demos, no limit in the way of the load. */
const baseEnv: Record<string, string> = {
  HOST: '127.0.0.1',
  REDIS_URL: '',
  CALLGATE_DEMO_SEED: 'false',
  // Every request is still counted by the limiter; none is refused.
  CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000000',
  CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
  CALLGATE_LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
};

/** Runs `callgate <args> --json` on the database and returns its JSON answer. */
export async function cli<T>(database: BenchDatabase, args: readonly string[], env: Record<string, string> = {}): Promise<T> {
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(root, 'bin/callgate.js'), ...args, '--json'], {
    env: { ...process.env, ...baseEnv, ...database.env, ...env },
  });
  return JSON.parse(stdout) as T;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** package.json's start script, `exec env NAME=value … node <flags> dist/server.js`, taken apart. */
function startCommand(): { env: Record<string, string>; nodeFlags: string[] } {
  const start = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const match = /^exec(?: env((?: [A-Z_]+=\S+)+))? node((?: --\S+)*) dist\/server\.js$/.exec(start);
  if (!match) throw new Error(`package.json's start script is not "exec [env NAME=value …] node [--flag …] dist/server.js": ${start}`);
  const pairs = (match[1] ?? '').trim().split(' ').filter(Boolean);
  return {
    env: Object.fromEntries(pairs.map((pair) => pair.split('=', 2) as [string, string])),
    nodeFlags: (match[2] ?? '').trim().split(' ').filter(Boolean),
  };
}

export interface RunningProcess {
  readonly pid: number;
  readonly url: string;
  /** VmHWM of /proc/<pid>/status: the highest resident memory so far, in MB. */
  peakRssMb(): number;
  stop(): Promise<void>;
}

/** Starts dist/server.js as `npm start` does, on a free port, and waits until /healthz answers. */
export async function startServer(database: BenchDatabase, env: Record<string, string> = {}, port?: number): Promise<RunningProcess> {
  const start = startCommand();
  const listenPort = port ?? (await freePort());
  const log = path.join(runDir, `server-${database.dialect}-${listenPort}.log`);
  const child = spawn(process.execPath, [...start.nodeFlags, 'dist/server.js'], {
    cwd: root,
    env: { ...process.env, ...start.env, ...baseEnv, ...database.env, ...env, PORT: String(listenPort) },
    stdio: ['ignore', fs.openSync(log, 'a'), fs.openSync(log, 'a')],
  });
  return ready(child, `http://127.0.0.1:${listenPort}`, '/healthz', log);
}

/** Runs a bench script (TypeScript, through tsx) in a process of its own, listening on `port`. */
export async function startScript(script: string, port: number, env: Record<string, string>): Promise<RunningProcess> {
  const log = path.join(runDir, `${path.basename(script, '.ts')}-${port}.log`);
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, script)], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', fs.openSync(log, 'a'), fs.openSync(log, 'a')],
  });
  return ready(child, `http://127.0.0.1:${port}`, '/healthz', log);
}

async function ready(child: ChildProcess, url: string, probe: string, log: string): Promise<RunningProcess> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const process_: RunningProcess = {
    pid: child.pid ?? 0,
    url,
    peakRssMb() {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1] ?? Number.NaN) / 1024;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      // The server's own grace is 10 s; past it something is stuck and the next scenario must not wait on it.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    const ok = await fetch(url + probe).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return process_;
    await sleep(100);
  }
  await process_.stop();
  throw new Error(`${url} did not start; its log: ${log}\n${fs.readFileSync(log, 'utf8').slice(-2_000)}`);
}

/** One account with a test-mode key of the simulator agent; `mode: 'live'` makes the key live instead. */
export async function createAccount(database: BenchDatabase, mode: 'test' | 'live' = 'test', env: Record<string, string> = {}) {
  const account = await cli<{ id: string }>(database, ['accounts', 'create', '--name', 'bench'], env);
  const key = await cli<{ id: string; token: string }>(
    database,
    ['keys', 'create', '--account', account.id, '--name', 'bench', '--mode', mode],
    env,
  );
  return { accountId: account.id, keyId: key.id, token: key.token };
}

/** Adds a webhook endpoint for every event type to the account; returns its id. */
export async function addEndpoint(database: BenchDatabase, accountId: string, url: string): Promise<string> {
  return (await cli<{ id: string }>(database, ['webhooks', 'create', '--account', accountId, '--url', url])).id;
}

export const simulatorAgentId = 'agent_test_simulator';

/** Percentile of sorted values (nearest rank). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const median = (values: readonly number[]): number =>
  percentile(
    [...values].sort((a, b) => a - b),
    50,
  );

export function log(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}
