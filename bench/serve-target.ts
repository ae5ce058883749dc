/**
 * One server under load, in a process of its own (forked by bench/run.ts) so that the load generator never
 * takes turns on its event loop. Two kinds, named by the first argument:
 *   ceiling  bare Fastify 5 with one POST route answering 201 with a JSON body of the same size as a created call;
 *   floor    the statements a created call needs (those the service runs), written by hand on the raw driver, behind a
 *            bare Fastify route with the body schema: what this stack costs before any of callgate's own code;
 *   app      the real service from dist/ (createServices + buildApp, configured from the environment the parent
 *            sets, as server.ts does), its worker (call monitor, webhook dispatcher) running as in production,
 *            seeded with one account, one simulator agent and BENCH_KEYS API keys whose tokens go back to the parent.
 * It speaks to the parent over the IPC channel only (see TargetMessage / ParentMessage).
 */
import { createHash, randomBytes } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import Fastify, { type FastifyInstance } from 'fastify';
import pg from 'pg';
import { cpuProfiler, processStats, watchEventLoop, type ProcessStats } from './process-stats.js';

export type TargetKind = 'ceiling' | 'floor' | 'app';

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
    return reply.code(201).send({ id, agent_id: body.agent_id, to: body.to, status: 'initiated', created_at: new Date().toISOString() });
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, tokens: [], counts: async () => null, close: () => app.close() };
}

// The service runs from dist/ (what `npm start` runs; `npm run bench` builds it first), typed by its sources.
const dist = new URL('../dist/', import.meta.url);
async function fromDist<T>(file: string): Promise<T> {
  return (await import(new URL(file, dist).href)) as T;
}

type Services = import('../src/container.js').Services;

/** The service's database, migrated, with one account, its simulator agent and `keyCount` live keys. */
async function seededServices(keyCount: number): Promise<{ services: Services; tokens: string[] }> {
  const { loadConfig } = await fromDist<typeof import('../src/config.js')>('config.js');
  const { createServices } = await fromDist<typeof import('../src/container.js')>('container.js');
  const { createAccount } = await fromDist<typeof import('../src/features/identity/accounts.service.js')>(
    'features/identity/accounts.service.js',
  );
  const { upsertAgent } = await fromDist<typeof import('../src/features/agents/agents.service.js')>('features/agents/agents.service.js');
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
  return { services, tokens };
}

async function countCalls(db: Services['db'], clock: Services['clock']): Promise<CallCounts> {
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
}

async function startApp(keyCount: number): Promise<Running> {
  const { buildApp } = await fromDist<typeof import('../src/app.js')>('app.js');
  const { services, tokens } = await seededServices(keyCount);
  const { config, db, clock } = services;

  const app = buildApp(services);
  // As src/server.ts does with the default roles: the worker (call monitor, webhook dispatcher) runs beside the API.
  services.startWorker();
  await app.listen({ port: config.port, host: config.host });
  return {
    app,
    tokens,
    counts: () => countCalls(db, clock),
    async close() {
      await app.close();
      await services.close();
    },
  };
}

/**
 * The floor: what a created call needs of this stack, with none of callgate's own code on the path. A bare
 * Fastify route with the request's body schema runs the statements the service runs for it (the key by its
 * hash with its account's concurrency limit and the per-key limiter's count (on PostgreSQL one statement, on the
 * limiters' pool, as the service's `countWith`; on SQLite the read, then the service's own in-memory limiter),
 * the idempotency claim with the agent and the suppression list read with it (one statement on PostgreSQL), then
 * the call with the completion of its key: one transaction on SQLite, one statement on PostgreSQL), written by
 * hand on the raw driver and prepared once. No Kysely, no logger, hooks, request log, provider or call monitor: whatever the service
 * costs above this is its own; what this costs, no code of the service can remove.
 */
async function startFloor(keyCount: number): Promise<Running> {
  const { CreateCallBody } = await fromDist<typeof import('../src/features/calls/calls.schemas.js')>('features/calls/calls.schemas.js');
  const { services, tokens } = await seededServices(keyCount);
  const { config, database, clock, perKeyLimiter } = services;
  const route = 'POST /v1/calls';
  const dayMs = 24 * 60 * 60 * 1000;

  interface Key {
    id: string;
    account_id: string;
    mode: string;
    revoked_at: string | null;
    account_max_concurrent_calls: number | null;
  }
  interface Agent {
    id: string;
    agent_id: string;
    /** 0 or 1 on SQLite, a boolean on PostgreSQL. */
    to_suppressed: number | boolean;
  }
  interface Statements {
    /** The active key of a token's hash, and whether its request is within the per-key limit (counted). */
    key(hash: string): Promise<{ key: Key | undefined; allowed: boolean }>;
    /** The claim's 12 values, then the agent's read: whether the key was claimed, and the agent. */
    claimAndAgent(
      values: unknown[],
      accountId: string,
      agentId: string,
      to: string,
    ): Promise<{ claimed: number; agent: Agent | undefined }>;
    /** The call's 14 columns, then the completion's 4 values and the key's scope and owner (4). */
    store(call: unknown[], completion: unknown[]): Promise<void>;
  }
  const claimColumns = `(api_key_id, route, idempotency_key, request_hash, state, owner, response_status, response_body, response_headers, locked_until, expires_at, created_at)`;
  const callInsert = `insert into calls (id, account_id, api_key_id, agent_id, agent_ref, mode, provider, provider_conversation_id, to_number, metadata, status, created_at, updated_at, next_check_at)`;
  // The key with its account's concurrency limit, the agent with whether the number is suppressed: as the service reads them.
  const keySql = `select api_keys.*, (select a.max_concurrent_calls from accounts a where a.id = api_keys.account_id) as account_max_concurrent_calls from api_keys where token_hash = ?`;
  const agentSql = `select agents.*, exists (select 1 from suppressions s where s.account_id = agents.account_id and s.to_number = ?) as to_suppressed from agents where agents.account_id = ? and agents.agent_id = ?`;
  const completion = `update idempotency_keys set state = 'completed', response_status = ?, response_body = ?, response_headers = ?, expires_at = ? where api_key_id = ? and route = ? and idempotency_key = ? and owner = ?`;
  let statements: Statements;
  if (database.dialect === 'sqlite') {
    const sqlite = database.sqlite;
    const key = sqlite.prepare(keySql);
    const claim = sqlite.prepare(
      `insert into idempotency_keys ${claimColumns} values (${Array(12).fill('?').join(', ')}) on conflict do nothing`,
    );
    const agent = sqlite.prepare(agentSql);
    const insert = sqlite.prepare(`${callInsert} values (${Array(14).fill('?').join(', ')})`);
    const complete = sqlite.prepare(completion);
    const store = sqlite.transaction((call: unknown[], done: unknown[]) => {
      insert.run(call);
      complete.run(done);
    });
    statements = {
      key: async (hash) => {
        const found = key.get(hash) as Key | undefined;
        if (!found || found.revoked_at) return { key: undefined, allowed: false };
        return { key: found, allowed: (await perKeyLimiter.consume(`key:${found.id}`)).allowed };
      },
      claimAndAgent: async (values, accountId, agentId, to) => ({
        claimed: claim.run(values).changes,
        agent: agent.get(to, accountId, agentId) as Agent | undefined,
      }),
      store: async (call, done) => store(call, done),
    };
  } else {
    const pool = database.pool;
    // The same SQL with PostgreSQL's numbered placeholders.
    const numbered = (sql: string) => {
      let n = 0;
      return sql.replace(/\?/g, () => `$${++n}`);
    };
    const claimSql = numbered(
      `insert into idempotency_keys ${claimColumns} values (${Array(12).fill('?').join(', ')}) on conflict do nothing`,
    );
    const storeSql = numbered(
      `with inserted as (${callInsert} values (${Array(14).fill('?').join(', ')}) returning id) ${completion} and exists (select id from inserted)`,
    );
    // As the service runs them: the claim in a data-modifying WITH, the agent's read beside it, in one round trip.
    const claimAndAgentSql = numbered(
      `with claim as (${claimSql.replace(/\$\d+/g, '?')} returning 1), agent as (${agentSql}) ` +
        `select (select count(*)::int from claim) as claimed, agent.* from (select 1) as one left join agent on true`,
    );
    // As the service counts it (rate-limit.repository.ts): rate-limiter-flexible's upsert of the key's counter in a
    // data-modifying WITH beside the key's read, on the limiters' pool (synchronous_commit off).
    const keyCountSql =
      `with k as (${numbered(keySql)}), counted as (insert into rate_limits (key, points, expire) ` +
      `select $2::text || k.id, 1, $3::bigint from k where k.revoked_at is null on conflict (key) do update set ` +
      `points = case when rate_limits.expire <= $4::bigint then 1 else rate_limits.points + 1 end, ` +
      `expire = case when rate_limits.expire <= $4::bigint then $3::bigint else rate_limits.expire end returning points) ` +
      `select k.*, counted.points as rate_limit_points from k left join counted on true`;
    const windowMs = 60_000;
    statements = {
      // Each prepared once per connection (a name), as the service's hot statements are.
      key: async (hash) => {
        const nowMs = Date.now();
        const { rows } = await database.counterPool.query<Key & { rate_limit_points: number | null }>({
          name: 'floor-key-count',
          text: keyCountSql,
          values: [hash, 'cg_key:key:', nowMs + windowMs, nowMs],
        });
        const found = rows[0];
        if (!found || found.rate_limit_points === null) return { key: undefined, allowed: false };
        return { key: found, allowed: found.rate_limit_points <= config.rateLimitPerMinute };
      },
      claimAndAgent: async (values, accountId, agentId, to) => {
        const { rows } = await pool.query<Agent & { claimed: number; id: string | null }>({
          name: 'floor-claim-agent',
          text: claimAndAgentSql,
          values: [...values, to, accountId, agentId],
        });
        const row = rows[0]!;
        return { claimed: row.claimed, agent: row.id === null ? undefined : row };
      },
      store: async (call, done) => {
        await pool.query({ name: 'floor-store', text: storeSql, values: [...call, ...done] });
      },
    };
  }

  const app = Fastify({ ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allowUnionTypes: true } } });
  app.post('/v1/calls', { schema: { body: CreateCallBody } }, async (request, reply) => {
    const token = (request.headers.authorization ?? '').slice('Bearer '.length);
    const { key, allowed } = await statements.key(createHash('sha256').update(token).digest('hex'));
    if (!key) return reply.code(401).send({ error: 'unauthorized' });
    if (!allowed) return reply.code(429).send({ error: 'rate_limit_exceeded' });
    const body = request.body as { agent_id: string; to: string; metadata?: Record<string, unknown> };
    const idempotencyKey = String(request.headers['idempotency-key']);
    const now = clock.now();
    const createdAt = now.toISOString();
    const expiresAt = new Date(now.getTime() + dayMs).toISOString();
    const owner = randomBytes(9).toString('base64url');
    const requestHash = createHash('sha256').update(JSON.stringify(body)).digest('hex');
    // The floor places calls as the service does for an account without a concurrency limit (the benchmark's):
    // with one, the service takes a slot in a transaction of its own, which this does not write by hand.
    if (key.account_max_concurrent_calls !== null) throw new Error('the floor places calls only for accounts without max_concurrent_calls');
    // As the service does: the agent (and the suppression list) is read with the claim.
    const { claimed, agent } = await statements.claimAndAgent(
      [
        key.id,
        route,
        idempotencyKey,
        requestHash,
        'in_flight',
        owner,
        null,
        null,
        null,
        new Date(now.getTime() + 60_000).toISOString(),
        expiresAt,
        createdAt,
      ],
      key.account_id,
      body.agent_id,
      body.to,
    );
    if (claimed === 0) return reply.code(409).send({ error: 'idempotency_conflict' });
    if (!agent) return reply.code(403).send({ error: 'agent_not_found' });
    if (agent.to_suppressed) return reply.code(403).send({ error: 'number_suppressed' });
    const conversationId = `conv_${randomBytes(13).toString('hex')}`;
    const created = { id: `call_${conversationId}`, agent_id: agent.agent_id, to: body.to, status: 'initiated', created_at: createdAt };
    const headers = { location: `/v1/calls/${created.id}` };
    await statements.store(
      [
        created.id,
        key.account_id,
        key.id,
        agent.agent_id,
        agent.id,
        key.mode,
        'simulator',
        conversationId,
        body.to,
        body.metadata === undefined ? null : JSON.stringify(body.metadata),
        'initiated',
        createdAt,
        createdAt,
        new Date(now.getTime() + 3_000).toISOString(),
      ],
      [201, JSON.stringify(created), JSON.stringify(headers), expiresAt, key.id, route, idempotencyKey, owner],
    );
    return reply.code(201).headers(headers).send(created);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    app,
    tokens,
    // Nothing ends the floor's calls: it has no call monitor to report on.
    counts: async () => null,
    async close() {
      await app.close();
      await services.close();
    },
  };
}

async function main(): Promise<void> {
  const kind = process.argv[2] as TargetKind;
  const keys = Number(process.env.BENCH_KEYS ?? 1000);
  const running = kind === 'ceiling' ? await startCeiling() : kind === 'floor' ? await startFloor(keys) : await startApp(keys);
  const address = running.app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const profiler = cpuProfiler();

  process.on('message', (message: ParentMessage) => {
    void (async () => {
      switch (message.type) {
        case 'sample':
          return send({ type: 'sample', sample: sample() });
        case 'profile-start':
          await profiler.start();
          return send({ type: 'profile-started' });
        case 'profile-stop':
          await profiler.stop(message.file);
          return send({ type: 'profile-stopped' });
        case 'stop': {
          const calls = await running.counts();
          await running.close();
          send({ type: 'stopped', calls });
          process.disconnect();
          return;
        }
      }
    })().catch((error: unknown) => {
      send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
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
  send({ type: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exit(1);
});
