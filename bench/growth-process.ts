/**
 * The service with a grown database, in a process of its own (forked by bench/growth-bench.ts): the service as
 * built in dist/ (createServices + buildApp, configured from the environment the parent sets, as src/server.ts
 * does), its worker started only when asked. On its first start on a database it seeds the bench's accounts,
 * each with its simulator agent, live and test keys and one webhook endpoint (the bench receiver), and hands
 * the tokens to the parent; started again on the same database it leaves them as they are. On request it:
 *   load     adds calls i in [from, to) with as many events, deliveries and request-log rows, by bulk
 *            statements (INSERT … SELECT over generate_series on PostgreSQL, over a recursive CTE on SQLite,
 *            one transaction each), then ANALYZE on PostgreSQL as autovacuum would;
 *   plans    runs each hot path once (API routes through app.inject, jobs' claims and purges, the portal's
 *            reads) with every SQL statement captured where the drivers run it, and answers each distinct
 *            statement with its plan (EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL) for its parameters;
 *   backlog  adds due deliveries (and their events) for the dispatcher, then starts nothing;
 *   start-worker / drain  as bench/dispatcher-process.ts.
 * Row i is a pure function of i (its account, key, status and time), so the parent knows every call's id,
 * account and mode without asking.
 */
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { fromDist, onParentRequest, runServiceChild, sendToParent } from './service-child.js';
import { processStats, resetPeakRss, wallClockMs, watchEventLoop, type ProcessStats } from './process-stats.js';
import { growthAccounts, growthAgentId, isLiveKey, keysPerAccount, scansIn, type GrowthKey } from './growth-rows.js';

/** Calls, events and deliveries are spread over 30 days (less an hour, so that no retention job deletes any). */
const callSpanMs = 30 * 86_400_000 - 3_600_000;
/** Request-log rows over the 7 days the log keeps (CALLGATE_REQUEST_LOG_DAYS' default), less an hour. */
const requestLogSpanMs = 7 * 86_400_000 - 3_600_000;
/** Calls made in the last 10 minutes are still in progress. */
const inProgressMs = 600_000;

export interface StatementPlan {
  /** The hot path that ran it (first one, when several did). */
  readonly path: string;
  readonly sql: string;
  /** The plan's lines, as the database printed them. */
  readonly plan: readonly string[];
  /** Tables that grow which the plan reads whole (see scansIn). */
  readonly scans: readonly string[];
  /** A read's time, the median of five runs with the same parameters (ms); null for a write. */
  readonly ms: number | null;
}

export type GrowthMessage =
  | { readonly type: 'ready'; readonly port: number; readonly keys: readonly GrowthKey[] | null; readonly secret: string | null }
  | { readonly type: 'loaded'; readonly ms: number; readonly rows: Readonly<Record<string, number>>; readonly bytes: number }
  | { readonly type: 'plans'; readonly plans: readonly StatementPlan[] }
  | { readonly type: 'backlog-done'; readonly ms: number }
  | { readonly type: 'worker-started'; readonly atMs: number }
  | { readonly type: 'drained'; readonly deliveries: Readonly<Record<string, number>> }
  | { readonly type: 'stats'; readonly stats: ProcessStats }
  | { readonly type: 'peak-reset' | 'woken' | 'stopped' }
  | { readonly type: 'failed'; readonly message: string };

export type GrowthRequest =
  | { readonly type: 'load'; readonly from: number; readonly to: number; readonly keys: readonly GrowthKey[] }
  | { readonly type: 'plans'; readonly token: string; readonly testToken: string; readonly accountId: string; readonly callId: string }
  | { readonly type: 'backlog'; readonly from: number; readonly count: number; readonly accountId: string }
  | { readonly type: 'start-worker' }
  /** Wakes the running worker's dispatcher (after a backlog written behind its back). */
  | { readonly type: 'wake' }
  | { readonly type: 'drain' }
  | { readonly type: 'stats' }
  | { readonly type: 'reset-peak' }
  | { readonly type: 'stop' };

const send = (message: GrowthMessage) => sendToParent(message);

const { loadConfig } = await fromDist<typeof import('../src/config.js')>('config.js');
const { createServices } = await fromDist<typeof import('../src/container.js')>('container.js');
const { buildApp } = await fromDist<typeof import('../src/app.js')>('app.js');
const { createAccount } = await fromDist<typeof import('../src/features/identity/accounts.service.js')>(
  'features/identity/accounts.service.js',
);
const { upsertAgent } = await fromDist<typeof import('../src/features/agents/agents.service.js')>('features/agents/agents.service.js');
const { createApiKey } = await fromDist<typeof import('../src/features/api-keys/api-keys.service.js')>(
  'features/api-keys/api-keys.service.js',
);
const { createEndpoint } = await fromDist<typeof import('../src/features/webhook-endpoints/endpoints.service.js')>(
  'features/webhooks/endpoints.service.js',
);
const { claimDueDeliveries } = await fromDist<typeof import('../src/features/webhook-delivery/dispatcher.repository.js')>(
  'features/webhooks/dispatcher.repository.js',
);
const { claimDueCalls } = await fromDist<typeof import('../src/features/calls/calls.repository.js')>('features/calls/calls.repository.js');
const { listCallsWithMode } = await fromDist<typeof import('../src/features/calls/calls.service.js')>('features/calls/calls.service.js');
const dialer = await fromDist<typeof import('../src/features/batches/batch-dialer.repository.js')>(
  'features/batches/batch-dialer.repository.js',
);
const { loadOverview } = await fromDist<typeof import('../src/portal/portal.service.js')>('features/portal/portal.service.js');
const { listRecentRequests, purgeOldRequests } = await fromDist<typeof import('../src/features/request-log/request-log.service.js')>(
  'features/request-log/request-log.service.js',
);
const { purgeFinishedEvents } = await fromDist<typeof import('../src/features/events/event-retention.service.js')>(
  'features/webhooks/event-retention.repository.js',
);

type Services = Awaited<ReturnType<typeof createServices>>;
type App = ReturnType<typeof buildApp>;

// Every statement the drivers run while `capturing` is on, with its parameters: better-sqlite3's statements
// (prepared or cached) and pg's Client#query (Kysely's and the rate limiter's), as bench/serve-target.ts counts them.
let capturing: string | null = null;
const captured: { path: string; sql: string; params: unknown[] }[] = [];
type Run = (this: BetterSqlite3.Statement, ...args: unknown[]) => unknown;
const memory = new BetterSqlite3(':memory:');
const statementPrototype = Object.getPrototypeOf(memory.prepare('select 1')) as Record<'run' | 'all' | 'get' | 'iterate', Run>;
memory.close();
for (const method of ['run', 'all', 'get', 'iterate'] as const) {
  const original = statementPrototype[method];
  statementPrototype[method] = function capturedStatement(this: BetterSqlite3.Statement, ...args: unknown[]) {
    if (capturing !== null) captured.push({ path: capturing, sql: this.source, params: args });
    return original.apply(this, args);
  };
}
const pgQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function capturedQuery(this: pg.Client, ...args: unknown[]) {
  if (capturing !== null) {
    const first = args[0] as string | { text?: string; values?: unknown[] };
    const text = typeof first === 'string' ? first : first?.text;
    const values = typeof first === 'string' ? args[1] : first?.values;
    if (typeof text === 'string') captured.push({ path: capturing, sql: text, params: Array.isArray(values) ? values : [] });
  }
  return (pgQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pgQuery;

// ---------------------------------------------------------------------------------------------------------
// Bulk load: each statement makes rows i in [from, to) from the series and the keys table (one row per key).

type Dialect = 'sqlite' | 'postgres';

function iso(dialect: Dialect, msExpr: string): string {
  return dialect === 'postgres'
    ? `to_char(to_timestamp((${msExpr}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', (${msExpr}) / 1000.0, 'unixepoch')`;
}

function pad(dialect: Dialect, expr: string): string {
  return dialect === 'postgres' ? `lpad((${expr})::text, 12, '0')` : `substr('000000000000' || (${expr}), -12)`;
}

/** `select … from` the series joined to the keys, with `off` (ms before now) and `off7` (for the request log). */
function rowsOf(dialect: Dialect, from: number, to: number, columns: string): { prefix: string; body: string } {
  const keyCount = growthAccounts * keysPerAccount;
  const series =
    dialect === 'postgres'
      ? { prefix: '', source: `generate_series(${from}, ${to - 1}) as s(g)` }
      : { prefix: `with recursive s(g) as (select ${from} union all select g + 1 from s where g < ${to - 1}) `, source: 's' };
  // Multiplicative hashes of i: times spread evenly over the span whatever the range loaded.
  return {
    prefix: series.prefix,
    body: `select ${columns} from (select s.g as g, k.*, (s.g * 2654435761) % ${callSpanMs} as off, (s.g * 2246822519) % ${requestLogSpanMs} as off7
      from ${series.source} join bench_growth_keys k on k.n = s.g % ${keyCount}) x`,
  };
}

function loadStatements(dialect: Dialect, from: number, to: number, nowMs: number): { table: string; sql: string }[] {
  const id = (prefix: string) => `'${prefix}' || ${pad(dialect, 'x.g')}`;
  const created = `${nowMs} - x.off`;
  const status = `case when x.off < ${inProgressMs} then 'initiated' when x.g % 100 < 78 then 'completed' else 'failed' end`;
  const ended = `(${created} + 5000 + (20 + x.g % 280) * 1000)`;
  const summary = "'The agent reached the contact, confirmed the appointment for Tuesday at 9:30 and answered a question about parking.'";
  const calls = rowsOf(
    dialect,
    from,
    to,
    `${id('call_conv_bench')}, x.account_id, x.api_key_id, '${growthAgentId}', x.agent_ref, x.mode, 'simulator', ${id('conv_bench')},
     '+1415' || substr('0000000' || (2000000 + x.g % 7000000), -7),
     '{"customer_id":"cus_' || x.g || '","campaign":"renewals","attempt":1}',
     ${status},
     ${iso(dialect, created)},
     ${iso(dialect, `case when x.off < ${inProgressMs} then ${created} else ${ended} + 1000 end`)},
     case when x.off < ${inProgressMs} then ${iso(dialect, `${nowMs} + 3600000 + x.off`)} end,
     case when x.off >= ${inProgressMs} and x.g % 100 < 78 then ${iso(dialect, `${created} + 5000`)} end,
     case when x.off >= ${inProgressMs} and x.g % 100 < 78 then ${iso(dialect, ended)} end,
     case when x.off >= ${inProgressMs} and x.g % 100 < 78 then 20 + x.g % 280 end,
     case when x.off >= ${inProgressMs} and x.g % 100 < 78 then ${summary} end,
     case when x.off >= ${inProgressMs} and x.g % 100 >= 78 then (case x.g % 3 when 0 then 'no_answer' when 1 then 'busy' else 'rejected' end) end,
     case when x.off >= ${inProgressMs} and x.g % 100 >= 78 then 'The call was not answered.' end,
     case when x.off >= ${inProgressMs} and x.g % 100 >= 78 then ${iso(dialect, `${created} + 30000`)} end,
     null, 'crm-' || x.g`,
  );
  const eventAt = `(${ended} + 1000)`;
  const eventType = `case when x.g % 100 < 78 then 'call.completed' else 'call.failed' end`;
  const events = rowsOf(
    dialect,
    from,
    to,
    `${id('evt_bench')}, x.account_id, ${eventType}, ${id('call_conv_bench')},
     '{"id":"evt_bench' || ${pad(dialect, 'x.g')} || '","type":"' || ${eventType} || '","created_at":"' || ${iso(dialect, eventAt)} ||
       '","data":{"id":"call_conv_bench' || ${pad(dialect, 'x.g')} || '","agent_id":"${growthAgentId}","status":"' ||
       (case when x.g % 100 < 78 then 'completed' else 'failed' end) || '","duration_seconds":' || (20 + x.g % 280) ||
       ',"transcript_summary":' || ${summary.replace(/^'/, `'"`).replace(/'$/, `"'`)} || ',"metadata":{"customer_id":"cus_' || x.g || '"}}}',
     ${iso(dialect, eventAt)}, x.mode`,
  );
  // Deliveries: most succeeded, some failed for good, a few pending a retry hours ahead (a failing endpoint).
  const deliveryStatus = `case when x.g % 1000 < 5 then 'pending' when x.g % 1000 < 35 then 'failed' else 'succeeded' end`;
  const deliveries = rowsOf(
    dialect,
    from,
    to,
    `${id('dlv_bench')}, ${id('evt_bench')}, x.endpoint_id, x.account_id, ${deliveryStatus}, 'event',
     case when x.g % 1000 < 5 then 3 when x.g % 1000 < 35 then 8 else 1 end,
     case when x.g % 1000 < 5 then ${iso(dialect, `${nowMs} + 3600000 + (x.g % 5) * 3600000`)} end,
     null, null, ${iso(dialect, `${eventAt} + 200`)},
     case when x.g % 1000 < 35 then 503 else 200 end,
     case when x.g % 1000 < 35 then 'The endpoint answered 503.' end,
     ${iso(dialect, eventAt)}, ${iso(dialect, `${eventAt} + 200`)}`,
  );
  const logAt = `${nowMs} - x.off7`;
  const requestLogs = rowsOf(
    dialect,
    from,
    to,
    `${id('req_bench')}, x.account_id, x.api_key_id, x.prefix,
     case when x.g % 10 < 3 then 'POST' else 'GET' end,
     case when x.g % 10 < 3 then '/v1/calls' when x.g % 10 < 6 then '/v1/calls' else '/v1/calls/call_conv_bench' || ${pad(dialect, 'x.g')} end,
     case when x.g % 100 = 99 then 422 when x.g % 10 < 3 then 201 else 200 end,
     case when x.g % 100 = 99 then 'validation_failed' end,
     case when x.g % 10 < 3 then 'idem-' || x.g end,
     3 + x.g % 40, ${iso(dialect, logAt)},
     case when x.g % 10 < 3 then '{"agent_id":"${growthAgentId}","to":"+14155550123","metadata":{"customer_id":"cus_' || x.g || '"}}' end,
     case when x.g % 10 < 3 then '{"id":"call_conv_bench' || ${pad(dialect, 'x.g')} || '","agent_id":"${growthAgentId}","to":"+14155550123","status":"initiated"}' end`,
  );
  const insert = (table: string, columns: string, rows: { prefix: string; body: string }) => ({
    table,
    sql: `${rows.prefix}insert into ${table} (${columns}) ${rows.body}`,
  });
  return [
    insert(
      'calls',
      'id, account_id, api_key_id, agent_id, agent_ref, mode, provider, provider_conversation_id, to_number, metadata, status, created_at, updated_at, next_check_at, started_at, ended_at, duration_seconds, transcript_summary, failure_reason, failure_message, failed_at, batch_id, reference',
      calls,
    ),
    // Calls in progress have no event yet; every other one has its outcome's event and its delivery.
    insert('webhook_events', 'id, account_id, type, call_id, payload, created_at, mode', {
      prefix: events.prefix,
      body: `${events.body} where x.off >= ${inProgressMs}`,
    }),
    insert(
      'webhook_deliveries',
      'id, event_id, endpoint_id, account_id, status, trigger, attempt_count, next_attempt_at, locked_by, locked_until, last_attempt_at, last_status_code, last_error, created_at, updated_at',
      { prefix: deliveries.prefix, body: `${deliveries.body} where x.off >= ${inProgressMs}` },
    ),
    // One attempt per delivery that was tried (all here): what event retention deletes with them.
    insert('webhook_attempts', 'id, delivery_id, attempt_number, url, attempted_at, status_code, duration_ms, response_excerpt, error', {
      prefix: deliveries.prefix,
      body: `${
        rowsOf(
          dialect,
          from,
          to,
          `${id('att_bench')}, ${id('dlv_bench')}, 1, 'https://hooks.example.com/callgate', ${iso(dialect, `${eventAt} + 200`)},
        case when x.g % 1000 < 35 then 503 else 200 end, 40 + x.g % 200, case when x.g % 1000 < 35 then 'Service Unavailable' else 'ok' end,
        null`,
        ).body
      } where x.off >= ${inProgressMs}`,
    }),
    // The idempotency records of the last day's calls (the purge keeps them 24 hours): what the claim of a
    // new key is planned against.
    insert(
      'idempotency_keys',
      'api_key_id, route, idempotency_key, request_hash, state, owner, response_status, response_body, response_headers, locked_until, expires_at, created_at',
      {
        prefix: calls.prefix,
        body: `${
          rowsOf(
            dialect,
            from,
            to,
            `x.api_key_id, 'POST /v1/calls', 'idem-' || x.g, 'sha256-of-the-request-' || x.g, 'completed', 'owner-' || x.g, 201,
          '{"id":"call_conv_bench' || ${pad(dialect, 'x.g')} || '","status":"initiated"}', '{"content-type":"application/json"}',
          ${iso(dialect, `${created} + 30000`)}, ${iso(dialect, `${created} + 86400000`)}, ${iso(dialect, created)}`,
          ).body
        } where x.off < 86000000`,
      },
    ),
    insert(
      'request_logs',
      'id, account_id, api_key_id, key_prefix, method, path, status, error_code, idempotency_key, duration_ms, created_at, request_body, response_body',
      requestLogs,
    ),
  ];
}

interface KeyRow {
  n: number;
  account_id: string;
  api_key_id: string;
  mode: string;
  agent_ref: string;
  endpoint_id: string;
  prefix: string;
}

async function keyRows(services: Services, keys: readonly GrowthKey[]): Promise<KeyRow[]> {
  const { db } = services;
  const agents = await db.selectFrom('agents').select(['id', 'account_id']).where('agent_id', '=', growthAgentId).execute();
  const endpoints = await db.selectFrom('webhook_endpoints').select(['id', 'account_id']).execute();
  const prefixes = await db.selectFrom('api_keys').select(['id', 'prefix']).execute();
  return keys.map((key) => ({
    // Row i takes key n = i % keys: account n % accounts, key n / accounts (see rowKey).
    n: key.key * growthAccounts + key.account,
    account_id: key.accountId,
    api_key_id: key.apiKeyId,
    mode: key.mode,
    agent_ref: agents.find((a) => a.account_id === key.accountId)!.id,
    endpoint_id: endpoints.find((e) => e.account_id === key.accountId)!.id,
    prefix: prefixes.find((p) => p.id === key.apiKeyId)!.prefix,
  }));
}

const loadedTables = ['calls', 'webhook_events', 'webhook_deliveries', 'webhook_attempts', 'idempotency_keys', 'request_logs'];

const keysTable =
  'create table if not exists bench_growth_keys (n integer primary key, account_id text not null, api_key_id text not null, mode text not null, agent_ref text not null, endpoint_id text not null, prefix text not null)';

async function load(services: Services, message: Extract<GrowthRequest, { type: 'load' }>): Promise<void> {
  const started = wallClockMs();
  const rows = await keyRows(services, message.keys);
  const statements = loadStatements(services.database.dialect, message.from, message.to, Date.now());
  const counts: Record<string, number> = {};
  const handle = services.database;
  if (handle.dialect === 'sqlite') {
    const sqlite = handle.sqlite;
    sqlite.exec(keysTable);
    sqlite.exec('delete from bench_growth_keys');
    const insertKey = sqlite.prepare(
      'insert into bench_growth_keys (n, account_id, api_key_id, mode, agent_ref, endpoint_id, prefix) values (@n, @account_id, @api_key_id, @mode, @agent_ref, @endpoint_id, @prefix)',
    );
    // One transaction for everything: one sync of the WAL. A page cache large enough for the indexes while
    // they are written (the service's default of 2 MB made the load read and write each index page many
    // times), put back afterwards so that the measured process runs as the service does.
    const cacheSize = sqlite.pragma('cache_size', { simple: true }) as number;
    sqlite.pragma('cache_size = -1048576');
    try {
      sqlite.transaction(() => {
        for (const row of rows) insertKey.run(row);
        // The migrations' secondary indexes are dropped and made again after the rows: built from sorted
        // entries, several times faster than row by row (those of unique constraints stay).
        const indexes = sqlite
          .prepare(
            `select name, sql from sqlite_master where type = 'index' and sql is not null and tbl_name in (${loadedTables.map(() => '?').join(', ')})`,
          )
          .all(...loadedTables) as { name: string; sql: string }[];
        for (const index of indexes) sqlite.exec(`drop index "${index.name}"`);
        for (const statement of statements) counts[statement.table] = sqlite.prepare(statement.sql).run().changes;
        for (const index of indexes) sqlite.exec(index.sql);
      })();
    } finally {
      sqlite.pragma(`cache_size = ${cacheSize}`);
    }
    // The WAL holds every page the load wrote: fold it into the database now, not in the measured window.
    sqlite.pragma('wal_checkpoint(TRUNCATE)');
  } else {
    const client = await handle.pool.connect();
    try {
      await client.query('begin');
      await client.query(keysTable);
      await client.query('delete from bench_growth_keys');
      for (const row of rows) {
        await client.query(
          'insert into bench_growth_keys (n, account_id, api_key_id, mode, agent_ref, endpoint_id, prefix) values ($1, $2, $3, $4, $5, $6, $7)',
          [row.n, row.account_id, row.api_key_id, row.mode, row.agent_ref, row.endpoint_id, row.prefix],
        );
      }
      // As on SQLite, the secondary indexes are made again after the rows (constraints' indexes stay).
      const { rows: indexes } = await client.query<{ name: string; definition: string }>(
        `select indexname as name, indexdef as definition from pg_indexes
         where schemaname = current_schema() and tablename = any($1) and indexname not in (select conname from pg_constraint)`,
        [loadedTables],
      );
      for (const index of indexes) await client.query(`drop index "${index.name}"`);
      for (const statement of statements) counts[statement.table] = (await client.query(statement.sql)).rowCount ?? 0;
      await client.query(`set local maintenance_work_mem = '256MB'`);
      for (const index of indexes) await client.query(index.definition);
      await client.query('commit');
      // As autovacuum does soon after such a change (its insert threshold): the planner's statistics, and the visibility map, so its
      // vacuum of a million fresh rows per table does not run during the measured rounds (a database in service has had it).
      await client.query('vacuum (analyze)');
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
  send({ type: 'loaded', ms: wallClockMs() - started, rows: counts, bytes: await databaseBytes(services) });
}

async function databaseBytes(services: Services): Promise<number> {
  const handle = services.database;
  if (handle.dialect === 'sqlite') {
    const pages = handle.sqlite.pragma('page_count', { simple: true }) as number;
    const size = handle.sqlite.pragma('page_size', { simple: true }) as number;
    return pages * size;
  }
  const { rows } = await handle.pool.query<{ size: string }>('select pg_database_size(current_database()) as size');
  return Number(rows[0]?.size ?? 0);
}

/** Due deliveries for the dispatcher, each with its event: ids `evt_backlog…`/`dlv_backlog…`, one account's endpoint. */
async function backlog(services: Services, message: Extract<GrowthRequest, { type: 'backlog' }>): Promise<void> {
  const started = wallClockMs();
  const dialect = services.database.dialect;
  const { db } = services;
  const endpoint = await db
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('account_id', '=', message.accountId)
    .executeTakeFirstOrThrow();
  const to = message.from + message.count;
  const series =
    dialect === 'postgres'
      ? { prefix: '', source: `generate_series(${message.from}, ${to - 1}) as s(g)` }
      : { prefix: `with recursive s(g) as (select ${message.from} union all select g + 1 from s where g < ${to - 1}) `, source: 's' };
  const now = new Date().toISOString();
  const payload = `'{"id":"evt_backlog' || ${pad(dialect, 's.g')} || '","type":"call.completed","created_at":"${now}","data":{"id":"call_x","status":"completed","duration_seconds":95}}'`;
  const statements = [
    `${series.prefix}insert into webhook_events (id, account_id, type, call_id, payload, created_at, mode)
     select 'evt_backlog' || ${pad(dialect, 's.g')}, '${message.accountId}', 'call.completed', null, ${payload}, '${now}', 'live' from ${series.source}`,
    `${series.prefix}insert into webhook_deliveries (id, event_id, endpoint_id, account_id, status, trigger, attempt_count, next_attempt_at, created_at, updated_at)
     select 'dlv_backlog' || ${pad(dialect, 's.g')}, 'evt_backlog' || ${pad(dialect, 's.g')}, '${endpoint.id}', '${message.accountId}', 'pending', 'event', 0, '${now}', '${now}', '${now}' from ${series.source}`,
  ];
  const handle = services.database;
  if (handle.dialect === 'sqlite') {
    handle.sqlite.transaction(() => {
      for (const statement of statements) handle.sqlite.prepare(statement).run();
    })();
  } else {
    const client = await handle.pool.connect();
    try {
      await client.query('begin');
      for (const statement of statements) await client.query(statement);
      await client.query('commit');
      await client.query('analyze webhook_deliveries, webhook_events');
    } finally {
      client.release();
    }
  }
  global.gc?.();
  resetPeakRss();
  send({ type: 'backlog-done', ms: wallClockMs() - started });
}

// ---------------------------------------------------------------------------------------------------------
// Plans: each hot path once, its statements captured, then each distinct statement explained.

async function during(path: string, run: () => Promise<unknown>): Promise<void> {
  capturing = path;
  try {
    await run();
  } finally {
    capturing = null;
  }
}

async function inject(app: App, token: string, method: 'GET' | 'POST', url: string, payload?: object): Promise<void> {
  const response = await app.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${token}`,
      ...(payload ? { 'content-type': 'application/json', 'idempotency-key': `plans-${Date.now()}-${Math.random()}` } : {}),
    },
    ...(payload ? { payload: JSON.stringify(payload) } : {}),
  });
  if (response.statusCode >= 300) throw new Error(`${method} ${url} answered ${response.statusCode}: ${response.body.slice(0, 300)}`);
}

async function explain(services: Services, statement: { sql: string; params: unknown[] }): Promise<string[]> {
  const handle = services.database;
  if (handle.dialect === 'sqlite') {
    const rows = handle.sqlite.prepare(`explain query plan ${statement.sql}`).all(...statement.params) as {
      id: number;
      parent: number;
      detail: string;
    }[];
    // Indented by depth, as the sqlite3 shell prints it.
    const depth = new Map<number, number>([[0, 0]]);
    return rows.map((row) => {
      const d = (depth.get(row.parent) ?? 0) + 1;
      depth.set(row.id, d);
      return `${'  '.repeat(d - 1)}${row.detail}`;
    });
  }
  const { rows } = await handle.pool.query<{ 'QUERY PLAN': string }>(`explain ${statement.sql}`, statement.params);
  return rows.map((row) => row['QUERY PLAN']);
}

/** The median time of five runs of a read (a plain SELECT), or null for any other statement. */
async function timeRead(services: Services, statement: { sql: string; params: unknown[] }): Promise<number | null> {
  if (!/^select\b/i.test(statement.sql.trim()) || /\bfor update\b/i.test(statement.sql)) return null;
  const handle = services.database;
  const times: number[] = [];
  for (let run = 0; run < 5; run++) {
    const started = performance.now();
    if (handle.dialect === 'sqlite') handle.sqlite.prepare(statement.sql).all(...statement.params);
    else await handle.pool.query(statement.sql, statement.params);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[2]!;
}

async function plans(services: Services, app: App, message: Extract<GrowthRequest, { type: 'plans' }>): Promise<void> {
  const { db, clock } = services;
  const dialect = services.database.dialect;
  const now = clock.now();
  const at = now.toISOString();
  const lease = new Date(now.getTime() + 30_000).toISOString();
  captured.length = 0;
  const created = new Date(now.getTime() - 86_400_000).toISOString();
  await during('POST /v1/calls', () =>
    inject(app, message.token, 'POST', '/v1/calls', { agent_id: growthAgentId, to: '+14155550123', metadata: { customer_id: 'plans' } }),
  );
  await during('GET /v1/calls/{id}', () => inject(app, message.token, 'GET', `/v1/calls/${message.callId}`));
  await during('GET /v1/calls', () => inject(app, message.token, 'GET', '/v1/calls'));
  await during('GET /v1/calls?starting_after', () => inject(app, message.token, 'GET', `/v1/calls?starting_after=${message.callId}`));
  await during('GET /v1/calls?status=initiated', () => inject(app, message.token, 'GET', '/v1/calls?status=initiated'));
  await during('GET /v1/calls (test key)', () => inject(app, message.testToken, 'GET', '/v1/calls'));
  await during('GET /v1/events?type&created_after', () =>
    inject(app, message.token, 'GET', `/v1/events?type=call.failed&created_after=${encodeURIComponent(created)}`),
  );
  await during('GET /v1/events', () => inject(app, message.token, 'GET', '/v1/events'));
  // Row 40 is account 0's first live key's, like row 0, and ended long ago: it has its event.
  await during('GET /v1/events?starting_after', () => inject(app, message.token, 'GET', '/v1/events?starting_after=evt_bench000000000040'));
  await during('dispatcher claim', () => claimDueDeliveries(db, 'plans', at, lease, 50));
  await during('call monitor claim', () => claimDueCalls(db, at, lease, 100));
  await during('batch dialer: due batches', () => dialer.dueBatches(db, at, 10));
  await during('batch dialer: claim recipients', () =>
    db.transaction().execute((trx) => dialer.claimRecipients(trx, { id: 'batch_plans', max_concurrency: 10 }, at, lease)),
  );
  await during('batch dialer: expired leases', () => dialer.expiredDialing(db, at, 100));
  // Six days and 29 days back: a hundred rows each, so that the deletes run too (harmless to the figures).
  await during('request-log retention', () => purgeOldRequests(db, clock, { days: 6, limit: 100 }));
  await during('event retention', () => purgeFinishedEvents(db, new Date(now.getTime() - 29 * 86_400_000).toISOString(), 100));
  await during('portal overview', () => loadOverview(db, clock, message.accountId));
  await during('portal calls list', () => listCallsWithMode(db, message.accountId, { limit: 20 }));
  await during('portal calls list, status=initiated', () => listCallsWithMode(db, message.accountId, { limit: 20, status: 'initiated' }));
  await during('portal calls list, page 2', () => listCallsWithMode(db, message.accountId, { limit: 20, startingAfter: message.callId }));
  await during('request log list', () => listRecentRequests(db, clock, message.accountId, { limit: 100 }));
  await during('request log list, next page', () =>
    listRecentRequests(db, clock, message.accountId, { limit: 100, before: 'req_bench000000000040' }),
  );
  // The request log is written in batches after the answer: wait for its write.
  await during('request log write', () => services.requestLog.flush());

  const seen = new Set<string>();
  const out: StatementPlan[] = [];
  for (const statement of captured.splice(0)) {
    const text = statement.sql.trim();
    if (/^(begin|commit|rollback|savepoint|release|set |show |select 1$)/i.test(text) || seen.has(text)) continue;
    seen.add(text);
    let plan: string[];
    try {
      plan = await explain(services, statement);
    } catch (error) {
      plan = [`(not explained: ${(error as Error).message})`];
    }
    out.push({ path: statement.path, sql: text, plan, scans: scansIn(dialect, plan), ms: await timeRead(services, statement) });
  }
  send({ type: 'plans', plans: out });
}

// ---------------------------------------------------------------------------------------------------------

async function seed(services: Services): Promise<{ keys: GrowthKey[]; secret: string }> {
  const { db, clock } = services;
  const keys: GrowthKey[] = [];
  let secret = '';
  for (let account = 0; account < growthAccounts; account++) {
    const made = await createAccount(db, clock, { name: `Growth ${account}` });
    await upsertAgent(db, clock, { accountId: made.id, agentId: growthAgentId, name: 'Benchmark agent', provider: 'simulator' });
    const receiver = process.env.BENCH_RECEIVER_URL;
    if (!receiver) throw new Error('BENCH_RECEIVER_URL is not set');
    const endpoint = await createEndpoint(db, clock, true, { accountId: made.id, url: receiver });
    if (account === 0) secret = endpoint.secret;
    for (let key = 0; key < keysPerAccount; key++) {
      const mode = isLiveKey(key) ? 'live' : 'test';
      const { id, token } = await createApiKey(db, clock, { accountId: made.id, name: `growth ${key}`, mode });
      keys.push({ account, key, accountId: made.id, apiKeyId: id, token, mode });
    }
  }
  return { keys, secret };
}

async function main(): Promise<void> {
  watchEventLoop();
  const services = await createServices(loadConfig());
  const existing = await services.db.selectFrom('accounts').select('id').executeTakeFirst();
  const seeded = existing ? null : await seed(services);
  const app = buildApp(services);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  onParentRequest(async (message: GrowthRequest) => {
    switch (message.type) {
      case 'load':
        return load(services, message);
      case 'plans':
        return plans(services, app, message);
      case 'backlog':
        return backlog(services, message);
      case 'start-worker':
        services.startWorker();
        return send({ type: 'worker-started', atMs: wallClockMs() });
      case 'wake':
        services.notifier.notify();
        return send({ type: 'woken' });
      case 'drain': {
        await services.dispatcher.idle();
        const rows = await services.db
          .selectFrom('webhook_deliveries')
          .select((eb) => ['status', eb.fn.countAll<string | number>().as('n')])
          .where('id', 'like', 'dlv_backlog%')
          .groupBy('status')
          .execute();
        return send({ type: 'drained', deliveries: Object.fromEntries(rows.map((row) => [row.status, Number(row.n)])) });
      }
      case 'stats':
        return send({ type: 'stats', stats: processStats() });
      case 'reset-peak':
        global.gc?.();
        resetPeakRss();
        return send({ type: 'peak-reset' });
      case 'stop':
        await app.close();
        await services.close();
        send({ type: 'stopped' });
        process.disconnect();
        return;
    }
  });
  send({ type: 'ready', port, keys: seeded?.keys ?? null, secret: seeded?.secret ?? null });
}

runServiceChild('bench/growth-process.ts', main);
