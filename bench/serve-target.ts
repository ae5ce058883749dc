/**
 * One server under load, in a process of its own (forked by bench/run.ts) so that the load generator never
 * takes turns on its event loop. Two kinds, named by the first argument:
 *   ceiling  bare Fastify 5 with one POST route answering 201 with a JSON body of the same size as a created call;
 *   app      the real service from dist/ (createServices + buildApp, configured from the environment the parent
 *            sets, as server.ts does), its worker (call monitor, webhook dispatcher) running as in production,
 *            seeded with one account, one simulator agent and BENCH_KEYS API keys whose tokens go back to the parent.
 * It speaks to the parent over the IPC channel only (see TargetMessage / ParentMessage).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import BetterSqlite3 from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { processStats, watchEventLoop, type ProcessStats } from './process-stats.js';

export type TargetKind = 'ceiling' | 'app';

export interface TargetSample extends ProcessStats {
  /** SQL statements sent to the database since start, by text (the call monitor's included). */
  readonly statements: Readonly<Record<string, number>>;
}

export interface CallCounts {
  readonly total: number;
  readonly initiated: number;
  readonly ended: number;
  /** Still `initiated` although their check is due: work the monitor has not caught up with. */
  readonly overdue: number;
}

export type TargetMessage =
  | { readonly type: 'ready'; readonly port: number; readonly tokens: readonly string[]; readonly agentId: string }
  | { readonly type: 'sample'; readonly sample: TargetSample }
  | { readonly type: 'profile-stopped' | 'profile-started' }
  | { readonly type: 'stopped'; readonly calls: CallCounts | null }
  | { readonly type: 'failed'; readonly message: string };

export type ParentMessage =
  | { readonly type: 'sample' }
  | { readonly type: 'profile-start' }
  | { readonly type: 'profile-stop'; readonly file: string }
  | { readonly type: 'stop' };

export const benchAgentId = 'agent_bench';

// With BENCH_COUNT_STATEMENTS=1 (the profiled runs only: counting costs a few per cent of the CPU), count
// statements where both drivers run them: every execution of a better-sqlite3 statement (prepared or
// cached), and every PostgreSQL query (Kysely's and the rate limiter's), which goes through Client#query.
// SQLite executions are counted per statement object and turned into texts only when sampled, so the count
// costs a map update on an object key; the profile shows what it costs in all.
const statements = new Map<string, number>();
function count(sql: unknown): void {
  const text = typeof sql === 'string' ? sql : (sql as { text?: unknown } | null)?.text;
  const key = typeof text === 'string' ? text : '(not text)';
  statements.set(key, (statements.get(key) ?? 0) + 1);
}
const sqliteRuns = new Map<BetterSqlite3.Statement, number>();
function foldSqliteRuns(): void {
  for (const [statement, n] of sqliteRuns) statements.set(statement.source, (statements.get(statement.source) ?? 0) + n);
  sqliteRuns.clear();
}
type Run = (this: BetterSqlite3.Statement, ...args: unknown[]) => unknown;
const memory = new BetterSqlite3(':memory:');
const statementPrototype = Object.getPrototypeOf(memory.prepare('select 1')) as Record<'run' | 'all' | 'get' | 'iterate', Run>;
memory.close();
const pgQuery = pg.Client.prototype.query;
if (process.env.BENCH_COUNT_STATEMENTS === '1') {
  for (const method of ['run', 'all', 'get', 'iterate'] as const) {
    const original = statementPrototype[method];
    statementPrototype[method] = function countedStatement(this: BetterSqlite3.Statement, ...args: unknown[]) {
      sqliteRuns.set(this, (sqliteRuns.get(this) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
  pg.Client.prototype.query = function countedQuery(this: pg.Client, ...args: unknown[]) {
    count(args[0]);
    return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof pgQuery;
}

function send(message: TargetMessage): void {
  process.send?.(message);
}

watchEventLoop();

function sample(): TargetSample {
  foldSqliteRuns();
  return { statements: Object.fromEntries(statements), ...processStats() };
}

interface Running {
  readonly app: FastifyInstance;
  readonly tokens: readonly string[];
  counts(): Promise<CallCounts | null>;
  close(): Promise<void>;
}

/** Bare Fastify: the same request parsing and the same response size, nothing else. */
async function startCeiling(): Promise<Running> {
  const app = Fastify();
  const id = `call_conv_${'0'.repeat(26)}`;
  app.post('/v1/calls', async (request, reply) => {
    const body = request.body as { agent_id: string; to: string };
    return reply
      .code(201)
      .send({ id, agent_id: body.agent_id, to: body.to, status: 'initiated', created_at: new Date().toISOString() });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, tokens: [], counts: async () => null, close: () => app.close() };
}

// The service runs from dist/ (what `npm start` runs; `npm run bench` builds it first), typed by its sources.
const dist = new URL('../dist/', import.meta.url);
async function fromDist<T>(file: string): Promise<T> {
  return (await import(new URL(file, dist).href)) as T;
}

async function startApp(keyCount: number): Promise<Running> {
  const { loadConfig } = await fromDist<typeof import('../src/config.js')>('config.js');
  const { createServices } = await fromDist<typeof import('../src/container.js')>('container.js');
  const { buildApp } = await fromDist<typeof import('../src/app.js')>('app.js');
  const { createAccount } = await fromDist<typeof import('../src/features/accounts/accounts.service.js')>(
    'features/accounts/accounts.service.js',
  );
  const { upsertAgent } = await fromDist<typeof import('../src/features/agents/agents.service.js')>(
    'features/agents/agents.service.js',
  );
  const { createApiKey } = await fromDist<typeof import('../src/features/api-keys/api-keys.service.js')>(
    'features/api-keys/api-keys.service.js',
  );

  const config = loadConfig();
  const services = await createServices(config);
  const { db, clock } = services;
  const account = await createAccount(db, clock, { name: 'Benchmark' });
  await upsertAgent(db, clock, { accountId: account.id, agentId: benchAgentId, name: 'Benchmark agent', provider: 'simulator' });
  // One transaction for the keys: a thousand separate commits would make start-up slow on PostgreSQL.
  const tokens = await db.transaction().execute(async (trx) => {
    const made: string[] = [];
    for (let i = 0; i < keyCount; i++) {
      made.push((await createApiKey(trx, clock, { accountId: account.id, name: `bench ${i}`, mode: 'live' })).token);
    }
    return made;
  });

  const app = buildApp(services);
  // As src/server.ts does with the default roles: the worker (call monitor, webhook dispatcher) runs beside the API.
  services.startWorker();
  await app.listen({ port: config.port, host: config.host });
  return {
    app,
    tokens,
    async counts() {
      const now = clock.now().toISOString();
      const rows = await db
        .selectFrom('calls')
        .select((eb) => ['status', eb.fn.countAll<string | number>().as('n')])
        .groupBy('status')
        .execute();
      const overdue = await db
        .selectFrom('calls')
        .select((eb) => eb.fn.countAll<string | number>().as('n'))
        .where('status', '=', 'initiated')
        .where('next_check_at', '<=', now)
        .executeTakeFirst();
      const by = (status: string) => Number(rows.find((row) => row.status === status)?.n ?? 0);
      const total = rows.reduce((sum, row) => sum + Number(row.n), 0);
      return { total, initiated: by('initiated'), ended: total - by('initiated'), overdue: Number(overdue?.n ?? 0) };
    },
    async close() {
      await app.close();
      await services.close();
    },
  };
}

async function main(): Promise<void> {
  const kind = process.argv[2] as TargetKind;
  const running = kind === 'ceiling' ? await startCeiling() : await startApp(Number(process.env.BENCH_KEYS ?? 1000));
  const address = running.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const profiler = new Session();

  process.on('message', (message: ParentMessage) => {
    void (async () => {
      switch (message.type) {
        case 'sample':
          return send({ type: 'sample', sample: sample() });
        case 'profile-start':
          profiler.connect();
          await profiler.post('Profiler.enable');
          await profiler.post('Profiler.start');
          return send({ type: 'profile-started' });
        case 'profile-stop': {
          const { profile } = await profiler.post('Profiler.stop');
          fs.writeFileSync(message.file, JSON.stringify(profile));
          profiler.disconnect();
          return send({ type: 'profile-stopped' });
        }
        case 'stop': {
          const calls = await running.counts();
          await running.close();
          send({ type: 'stopped', calls });
          process.disconnect();
          return;
        }
      }
    })().catch((error: unknown) => {
      send({ type: 'failed', message: error instanceof Error ? error.stack ?? error.message : String(error) });
      process.exit(1);
    });
  });
  send({ type: 'ready', port, tokens: running.tokens, agentId: benchAgentId });
}

if (!process.send) {
  // Without the parent there is nobody to hand the port to, and the environment would be the caller's own.
  process.stderr.write('bench/serve-target.ts is started by bench/run.ts (npm run bench), not by hand\n');
  process.exit(2);
}

main().catch((error: unknown) => {
  send({ type: 'failed', message: error instanceof Error ? error.stack ?? error.message : String(error) });
  process.exit(1);
});
