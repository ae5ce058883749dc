/**
 * Rows written straight into the database with the server stopped, in bulk (INSERT … SELECT over a
 * series: generate_series on PostgreSQL, a recursive CTE on SQLite): stored calls with the event, delivery
 * and attempt each ended call leaves, for the growth scenario, and a backlog of due deliveries for the
 * dispatcher. Row i is a function of i alone. The columns are those of src/db/migrations.
 */
import { randomBytes } from 'node:crypto';
import type { BenchDatabase } from './harness.js';

export interface SeedAccount {
  readonly accountId: string;
  readonly keyId: string;
  /** The agents row of the simulator agent (agt_…). */
  readonly agentRef: string;
  readonly endpointId: string;
  /** Every endpoint of the account (endpointId first): a backlog is spread over them in turn. */
  readonly endpointIds?: readonly string[];
}

/** Stored calls are spread over the last 29 days: old enough to list, young enough that no retention job deletes them. */
const spanMs = 29 * 86_400_000;

export const storedCallId = (i: number) => `call_conv_bench${String(i).padStart(12, '0')}`;

function dialectSql(database: BenchDatabase) {
  const postgres = database.dialect === 'postgres';
  return {
    iso: (ms: string) =>
      postgres
        ? `to_char(to_timestamp((${ms}) / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
        : `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`,
    pad: (expr: string) => (postgres ? `lpad((${expr})::text, 12, '0')` : `substr('000000000000' || (${expr}), -12)`),
    /** `insert into <table> (<columns>) select <values> from the series s(g) for g in [from, to)`. */
    insert: (table: string, columns: string, values: string, from: number, to: number) =>
      postgres
        ? `insert into ${table} (${columns}) select ${values} from generate_series(${from}::bigint, ${to - 1}) as s(g);`
        : `with recursive s(g) as (select ${from} union all select g + 1 from s where g < ${to - 1})
           insert into ${table} (${columns}) select ${values} from s;`,
  };
}

/** The number the stored call `g` went to: one of 100,000, each called every 100,000th call (a CRM's contacts). */
export function benchNumber(g: string): string {
  return `'+1415' || (5500000 + ${g} % 100000)`;
}

/** The number of stored call `g`, as `benchNumber` wrote it. */
export function storedCallNumber(g: number): string {
  return `+1415${5_500_000 + (g % 100_000)}`;
}

/**
 * Calls [from, to) of `total`: 80 % completed, 20 % failed, each with its event, its delivery (succeeded)
 * and its attempt. Created in the order of their ids, as ids made from the time are, over the span.
 */
export async function loadCalls(
  database: BenchDatabase,
  seed: SeedAccount,
  rows: { from: number; to: number; total: number },
  nowMs: number,
) {
  const { iso, pad, insert } = dialectSql(database);
  const { from, to, total } = rows;
  const created = `(${nowMs - spanMs} + g * ${Math.floor(spanMs / total)})`;
  const ended = `(${created} + 60000)`;
  const completed = 'g % 5 <> 0';
  const eventType = `case when ${completed} then 'call.completed' else 'call.failed' end`;
  const payload = `'{"id":"evt_bench' || ${pad('g')} || '","type":"' || ${eventType} || '","created_at":"' || ${iso(ended)} ||
    '","data":{"id":"call_conv_bench' || ${pad('g')} || '","agent_id":"agent_test_simulator","to":"+14155550123","duration_seconds":55}}'`;
  const s = (text: string) => `'${text}'`;
  const statements = [
    insert(
      'calls',
      'id, account_id, api_key_id, agent_id, agent_ref, mode, provider, provider_conversation_id, to_number, metadata, status, created_at, updated_at, started_at, ended_at, duration_seconds, transcript_summary, failure_reason, failure_message, failed_at',
      `'call_conv_bench' || ${pad('g')}, ${s(seed.accountId)}, ${s(seed.keyId)}, 'agent_test_simulator', ${s(seed.agentRef)}, 'test',
       'simulator', 'conv_bench' || ${pad('g')}, ${benchNumber('g')}, '{"customer_id":"cus_' || g || '"}',
       case when ${completed} then 'completed' else 'failed' end, ${iso(created)}, ${iso(ended)},
       case when ${completed} then ${iso(`${created} + 5000`)} end, case when ${completed} then ${iso(ended)} end,
       case when ${completed} then 55 end, case when ${completed} then 'The appointment was confirmed.' end,
       case when ${completed} then null else 'no_answer' end, case when ${completed} then null else 'Nobody answered.' end,
       case when ${completed} then null else ${iso(ended)} end`,
      from,
      to,
    ),
    insert(
      'webhook_events',
      'id, account_id, type, call_id, payload, created_at, mode',
      `'evt_bench' || ${pad('g')}, ${s(seed.accountId)}, ${eventType}, 'call_conv_bench' || ${pad('g')}, ${payload}, ${iso(ended)}, 'test'`,
      from,
      to,
    ),
    insert(
      'webhook_deliveries',
      'id, event_id, endpoint_id, account_id, status, trigger, attempt_count, last_attempt_at, last_status_code, created_at, updated_at, mode',
      `'dlv_bench' || ${pad('g')}, 'evt_bench' || ${pad('g')}, ${s(seed.endpointId)}, ${s(seed.accountId)}, 'succeeded', 'event', 1,
       ${iso(ended)}, 200, ${iso(ended)}, ${iso(ended)}, 'test'`,
      from,
      to,
    ),
    insert(
      'webhook_attempts',
      'id, delivery_id, attempt_number, url, attempted_at, status_code, duration_ms, response_excerpt',
      `'att_bench' || ${pad('g')}, 'dlv_bench' || ${pad('g')}, 1, 'https://hooks.example.com/callgate', ${iso(ended)}, 200, 40, 'ok'`,
      from,
      to,
    ),
  ];
  for (const statement of statements) await database.exec(statement);
  // As autovacuum would after such a load (PostgreSQL 13+ vacuums a table after inserts too), before the
  // measures rather than during them: statistics, and the pages' hint bits and visibility map set once,
  // where a database that grew to this size over months has them. SQLite has neither unless asked.
  if (database.dialect === 'postgres') await database.exec('vacuum analyze');
}

/** `count` call.completed events, each with a delivery due now: the dispatcher's backlog. Ids start `evt_backlog_<tag>`. */
export async function seedBacklog(database: BenchDatabase, seed: SeedAccount, tag: string, count: number, nowMs: number): Promise<void> {
  const { iso, pad, insert } = dialectSql(database);
  const id = `'evt_backlog_${tag}_' || ${pad('g')}`;
  const payload = `'{"id":"' || ${id} || '","type":"call.completed","created_at":"${new Date(nowMs).toISOString()}","data":{"id":"call_conv_backlog' || g ||
    '","agent_id":"agent_test_simulator","to":"+14155550123","status":"completed","duration_seconds":55,"transcript_summary":"The appointment was confirmed.","metadata":{"customer_id":"cus_' || g || '"}}}'`;
  await database.exec(
    insert(
      'webhook_events',
      'id, account_id, type, payload, created_at, mode',
      `${id}, '${seed.accountId}', 'call.completed', ${payload}, ${iso(String(nowMs))}, 'test'`,
      0,
      count,
    ),
  );
  const endpoints = seed.endpointIds ?? [seed.endpointId];
  const endpoint = `case g % ${endpoints.length} ${endpoints.map((e, i) => `when ${i} then '${e}'`).join(' ')} end`;
  await database.exec(
    insert(
      'webhook_deliveries',
      'id, event_id, endpoint_id, account_id, status, trigger, attempt_count, next_attempt_at, created_at, updated_at, mode',
      `'dlv_backlog_${tag}_' || ${pad('g')}, ${id}, ${endpoint}, '${seed.accountId}', 'pending', 'event', 0,
       ${iso(String(nowMs))}, ${iso(String(nowMs))}, ${iso(String(nowMs))}, 'test'`,
      0,
      count,
    ),
  );
}

/** Webhook endpoints of the account at these URLs, each with a secret of its own; returns their ids. */
export async function seedEndpoints(
  database: BenchDatabase,
  seed: { readonly accountId: string; readonly tag: string },
  urls: readonly string[],
  nowMs: number,
  // The bench's accounts place calls with test keys: their events go to test endpoints only.
  mode: 'test' | 'live' = 'test',
): Promise<string[]> {
  const at = new Date(nowMs).toISOString();
  const ids = urls.map((_url, i) => `we_bench${seed.tag}${String(i).padStart(4, '0')}`);
  const accountId = seed.accountId;
  const values = urls.map(
    (url, i) =>
      `('${ids[i]}', '${accountId}', '${url}', '', 1, '["*"]', 'whsec_${randomBytes(24).toString('base64')}', '${at}', '${at}', '${mode}')`,
  );
  await database.exec(
    `insert into webhook_endpoints (id, account_id, url, description, enabled, event_types, secret, created_at, updated_at, mode) values ${values.join(', ')};`,
  );
  return ids;
}
