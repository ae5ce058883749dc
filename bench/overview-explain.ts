/**
 * `npx tsx bench/overview-explain.ts [sqlite|postgres]`: fills a fresh database with 1,000,000 calls, webhook
 * events and deliveries (half of them one account's, over 58 days) and 480,000 rows of the latency rollup,
 * then runs the overview charts' three queries for that account (30 days, test mode) through the real
 * repositories, printing each one's plan (EXPLAIN QUERY PLAN / EXPLAIN ANALYZE) and time. Not part of
 * `npm run bench`: a check that the queries read an index range, run by hand when they change.
 */
import { performance } from 'node:perf_hooks';
import { sql, type KyselyPlugin, type QueryId, type RootOperationNode } from 'kysely';
import { migrateToLatest, openDatabase, type Db } from '../src/db/database.js';
import { countCallOutcomes } from '../src/features/calls/calls.repository.js';
import { listLatencyCounts } from '../src/features/request-log/request-log.repository.js';
import { countDeliveryStates } from '../src/features/webhook-delivery/deliveries.repository.js';
import { createTestDatabase, type Dialect } from '../test/support/test-database.js';

const rows = Number(process.env.OVERVIEW_ROWS ?? 1_000_000);
const dialect = (process.argv[2] ?? 'sqlite') as Dialect;

/** Keeps the last query's tree, to compile it again for EXPLAIN. */
function recorder() {
  const last: { node?: RootOperationNode; queryId?: QueryId } = {};
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      last.node = args.node;
      last.queryId = args.queryId;
      return args.node;
    },
    async transformResult(args) {
      return args.result;
    },
  };
  return { plugin, last };
}

async function fill(db: Db): Promise<void> {
  const pg = dialect === 'postgres';
  // i = 0 .. rows-1; even rows are acct_0's, the others spread over nine accounts; a row every 5 s back from now.
  const account = sql`case when i % 2 = 0 then 'acct_0' else 'acct_' || (i % 9 + 1) end`;
  const mode = sql`case when i % 3 = 0 then 'live' else 'test' end`;
  const at = pg
    ? sql`to_char((now() - i * interval '5 seconds') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || (i * 5) || ' seconds')`;
  for (let n = 0; n < 10; n++)
    await sql`insert into accounts (id, name, created_at) values (${`acct_${n}`}, 'x', '2026-01-01T00:00:00.000Z')`.execute(db);
  const from = (select: ReturnType<typeof sql>) =>
    pg
      ? sql`${select} from generate_series(0, ${sql.lit(rows - 1)}) as s(i)`
      : sql`with recursive s(i) as (select 0 union all select i + 1 from s where i < ${sql.lit(rows - 1)}) ${select} from s`;
  await sql`insert into calls (id, account_id, api_key_id, agent_id, agent_ref, mode, provider, provider_conversation_id, to_number, status, failure_reason, created_at, updated_at)
    ${from(sql`select 'call_' || i, ${account}, 'key', 'agent', 'agent', ${mode}, 'simulator', 'conv_' || i, '+14155550123',
      case when i % 10 < 7 then 'completed' when i % 10 < 9 then 'failed' else 'initiated' end,
      case when i % 10 = 7 then 'busy' when i % 10 = 8 then 'no_answer' end, ${at}, ${at}`)}`.execute(db);
  await sql`insert into webhook_endpoints (id, account_id, url, description, enabled, event_types, secret, created_at, updated_at)
    values ('we_1', 'acct_0', 'https://example.test/', '', 1, '["*"]', 'whsec_x', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`.execute(
    db,
  );
  await sql`insert into webhook_events (id, account_id, type, call_id, mode, payload, created_at)
    ${from(sql`select 'evt_' || i, ${account}, 'call.completed', 'call_' || i, ${mode}, '{}', ${at}`)}`.execute(db);
  await sql`insert into webhook_deliveries (id, event_id, endpoint_id, account_id, mode, status, trigger, attempt_count, created_at, updated_at)
    ${from(sql`select 'dlv_' || i, 'evt_' || i, 'we_1', ${account}, ${mode}, case when i % 20 = 0 then 'failed' else 'succeeded' end, 'event', 1 + i % 3, ${at}, ${at}`)}`.execute(
    db,
  );
  // 10 accounts × 2 modes × 40 days × 24 hours × 25 buckets.
  const hours = 40 * 24;
  const latencyRows = 10 * 2 * hours * 25;
  const hourAt = pg
    ? sql`to_char((now() - (i / 500) * interval '1 hour') at time zone 'UTC', 'YYYY-MM-DD"T"HH24')`
    : sql`strftime('%Y-%m-%dT%H', 'now', '-' || (i / 500) || ' hours')`;
  await sql`insert into request_latency_hourly (account_id, mode, hour, bucket, count)
    ${pg ? sql`select 'acct_' || (i % 10), case when (i / 10) % 2 = 0 then 'test' else 'live' end, ${hourAt}, 30 + (i / 20) % 25, 1 from generate_series(0, ${sql.lit(latencyRows - 1)}) as s(i)` : sql`with recursive s(i) as (select 0 union all select i + 1 from s where i < ${sql.lit(latencyRows - 1)}) select 'acct_' || (i % 10), case when (i / 10) % 2 = 0 then 'test' else 'live' end, ${hourAt}, 30 + (i / 20) % 25, 1 from s`}`.execute(
    db,
  );
  await sql`analyze`.execute(db);
  if (pg) await sql`vacuum`.execute(db);
}

async function main(): Promise<void> {
  const database = await createTestDatabase(dialect);
  const handle = openDatabase(database.config);
  try {
    await migrateToLatest(handle.db);
    const started = performance.now();
    await fill(handle.db);
    console.log(
      `${dialect}: ${rows.toLocaleString('en-US')} calls, events and deliveries written in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    const since = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000);
    const { plugin, last } = recorder();
    const db = handle.db.withPlugin(plugin);
    const queries: [string, () => Promise<unknown[]>][] = [
      ['calls by outcome', () => countCallOutcomes(db, { accountId: 'acct_0', mode: 'test', since: since.toISOString(), slotLength: 10 })],
      [
        'deliveries by state',
        () => countDeliveryStates(db, { accountId: 'acct_0', mode: 'test', since: since.toISOString(), slotLength: 10 }),
      ],
      ['latency rollup', () => listLatencyCounts(db, 'acct_0', 'test', since.toISOString().slice(0, 13))],
    ];
    for (const [name, run] of queries) {
      await run(); // warm
      const t0 = performance.now();
      const result = await run();
      const ms = performance.now() - t0;
      const compiled = handle.db.getExecutor().compileQuery(last.node!, last.queryId!);
      const explain =
        dialect === 'postgres' ? `explain (analyze, buffers off, costs off) ${compiled.sql}` : `explain query plan ${compiled.sql}`;
      const plan = await handle.db.executeQuery<Record<string, unknown>>({ ...compiled, sql: explain, query: compiled.query });
      console.log(`\n## ${name}: ${result.length} groups in ${ms.toFixed(0)} ms\n${compiled.sql}`);
      for (const row of plan.rows) console.log(`  ${String(row['QUERY PLAN'] ?? row.detail)}`);
    }
  } finally {
    await handle.destroy();
    await database.drop();
  }
}

await main();
