/**
 * The overview's charts over HTTP, on SQLite and PostgreSQL: calls per hour by outcome, webhook deliveries
 * and the latency of POST /v1/calls, drawn as inline SVG, for the last 24 hours or 30 days, in one mode, of
 * the signed-in account only. The data is written straight into the tables at known times (a fixed clock);
 * latencies go through the request log's own batch writer.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { CallRow } from '../../src/features/calls/calls.tables.js';
import type { ApiKeyMode } from '../../src/features/api-keys/api-keys.tables.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient, type PortalClient } from '../support/portal-client.js';
import { callBody, startTestApp, webhookEndpointRow, type SeededAccount, type TestApp } from '../support/test-app.js';

const now = new Date('2026-11-24T10:30:00.000Z');
const hourMs = 60 * 60 * 1000;
const at = (msAgo: number) => new Date(now.getTime() - msAgo).toISOString();

/** The text of an element of the page by id (its first match), tags removed. */
function textOf(page: string, id: string): string {
  const match = new RegExp(`<(\\w+)[^>]* id="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(page);
  assert.ok(match, `no element #${id} on the page`);
  return match[2]!
    .replace(/<[^>]+>/g, '')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/** The SVG of a chart, found by the id of its title. */
function chartOf(page: string, id: string): string {
  const start = page.indexOf(`<title id="${id}-title">`);
  assert.ok(start > 0, `no chart ${id}`);
  return page.slice(page.lastIndexOf('<svg', start), page.indexOf('</svg>', start));
}

const barTitles = (svg: string) => [...svg.matchAll(/<g class="chart-bar"><title>([^<]*)<\/title>/g)].map((match) => match[1]);

await forEachDialect('Portal overview charts', (dialect) => {
  let t: TestApp;
  let client: PortalClient;
  let other: SeededAccount;
  let otherClient: PortalClient;

  async function insertCall(account: SeededAccount, id: string, mode: ApiKeyMode, createdAt: string, outcome: Partial<CallRow> = {}) {
    await t.services.db
      .insertInto('calls')
      .values({
        id,
        account_id: account.accountId,
        api_key_id: account.keyId,
        agent_id: account.agentId,
        agent_ref: account.agentId,
        mode,
        provider: 'simulator',
        provider_conversation_id: id,
        to_number: '+14155550123',
        metadata: null,
        status: 'completed',
        created_at: createdAt,
        updated_at: createdAt,
        next_check_at: null,
        started_at: null,
        ended_at: null,
        duration_seconds: null,
        transcript_summary: null,
        failure_reason: null,
        failure_message: null,
        failed_at: null,
        batch_id: null,
        reference: null,
        ...outcome,
      })
      .execute();
  }
  const failed = (reason: string) => ({ status: 'failed' as const, failure_reason: reason });

  let deliveries = 0;
  async function insertDelivery(
    account: SeededAccount,
    mode: ApiKeyMode,
    createdAt: string,
    status: 'pending' | 'succeeded' | 'failed',
    attempts: number,
  ) {
    const n = ++deliveries;
    const eventId = `evt_chart_${dialect}_${n}`;
    await t.services.db
      .insertInto('webhook_events')
      .values({
        id: eventId,
        account_id: account.accountId,
        type: 'call.completed',
        call_id: null,
        mode,
        payload: '{}',
        created_at: createdAt,
      })
      .execute();
    await t.services.db
      .insertInto('webhook_deliveries')
      .values({
        id: `dlv_chart_${dialect}_${n}`,
        event_id: eventId,
        endpoint_id: `we_chart_${account.accountId}`,
        account_id: account.accountId,
        mode,
        status,
        trigger: 'event',
        attempt_count: attempts,
        next_attempt_at: status === 'pending' ? createdAt : null,
        locked_by: null,
        locked_until: null,
        last_attempt_at: null,
        last_status_code: null,
        last_error: null,
        created_at: createdAt,
        updated_at: createdAt,
      })
      .execute();
  }

  function logCreate(account: SeededAccount, mode: ApiKeyMode, createdAt: string, durationMs: number, method = 'POST') {
    t.services.requestLog.add(
      {
        id: `req_chart_${Math.random().toString(36).slice(2)}`,
        account_id: account.accountId,
        api_key_id: account.keyId,
        key_prefix: account.token.slice(0, 12),
        method,
        path: '/v1/calls',
        status: 201,
        error_code: null,
        idempotency_key: null,
        duration_ms: durationMs,
        replayed: 0,
        created_at: createdAt,
      },
      mode,
    );
  }

  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock: new ManualClock(now) } });
    client = await signedInClient(t);
    other = await t.newAccount({ mode: 'test', agentId: 'agent_other' });
    otherClient = await signedInClient(t, other);
    const { seed } = t;

    // This hour: 3 completed, 2 busy, 1 no answer; two hours ago, 1 completed (all test).
    for (const i of [1, 2, 3]) await insertCall(seed, `call_chart_done_${i}`, 'test', at(20 * 60 * 1000 + i));
    for (const i of [1, 2]) await insertCall(seed, `call_chart_busy_${i}`, 'test', at(10 * 60 * 1000 + i), failed('busy'));
    await insertCall(seed, 'call_chart_noanswer', 'test', at(60 * 1000), failed('no_answer'));
    await insertCall(seed, 'call_chart_earlier', 'test', at(2 * hourMs));
    // Live calls an hour ago; test calls 2 and 10 days ago, outside the 24 hours.
    for (const i of [1, 2, 3, 4, 5]) await insertCall(seed, `call_chart_live_${i}`, 'live', at(hourMs + i));
    for (const i of [1, 2]) await insertCall(seed, `call_chart_2d_${i}`, 'test', at(2 * 24 * hourMs + i));
    for (const i of [1, 2, 3, 4]) await insertCall(seed, `call_chart_10d_${i}`, 'test', at(10 * 24 * hourMs + i));
    // 31 days ago: outside both periods.
    await insertCall(seed, 'call_chart_31d', 'test', at(31 * 24 * hourMs));
    // Another account's test calls, this hour: never on the seed account's page.
    for (const i of [1, 2, 3, 4, 5, 6, 7])
      await insertCall(other, `call_chart_other_${i}`, 'test', at(5 * 60 * 1000 + i), failed('timeout'));

    for (const account of [seed, other]) {
      await t.services.db
        .insertInto('webhook_endpoints')
        .values(webhookEndpointRow(account.accountId, `we_chart_${account.accountId}`, 'https://example.test/hook', at(30 * 24 * hourMs)))
        .execute();
    }
    await insertDelivery(seed, 'test', at(60 * 1000), 'succeeded', 1);
    await insertDelivery(seed, 'test', at(2 * 60 * 1000), 'succeeded', 1);
    await insertDelivery(seed, 'test', at(3 * 60 * 1000), 'succeeded', 3);
    await insertDelivery(seed, 'test', at(3 * hourMs), 'failed', 5);
    await insertDelivery(seed, 'test', at(4 * 60 * 1000), 'pending', 0);
    await insertDelivery(seed, 'live', at(60 * 1000), 'succeeded', 1);
    for (let i = 0; i < 6; i++) await insertDelivery(other, 'test', at(60 * 1000), 'failed', 2);

    // POST /v1/calls: 90 answers of 100 ms and 10 of 2 s this hour; 50 ms 3 days ago; a GET and a live one.
    for (let i = 0; i < 90; i++) logCreate(seed, 'test', at(60 * 1000), 100);
    for (let i = 0; i < 10; i++) logCreate(seed, 'test', at(2 * 60 * 1000), 2000);
    logCreate(seed, 'test', at(3 * 24 * hourMs), 50);
    logCreate(seed, 'test', at(60 * 1000), 9000, 'GET');
    logCreate(seed, 'live', at(60 * 1000), 5);
    for (let i = 0; i < 3; i++) logCreate(other, 'test', at(60 * 1000), 30_000);
    await t.services.requestLog.flush();
  });
  after(async () => {
    await t.close();
  });

  it("draws calls per hour by outcome as stacked bars, with the counts in the chart's accessible text", async () => {
    const page = await client.get('/developers?period=24h&mode=test');
    assert.equal(page.statusCode, 200);
    const svg = chartOf(page.body, 'chart-calls');
    assert.match(svg, /^<svg class="chart" viewBox="0 0 \d+ \d+" role="img" aria-labelledby="chart-calls-title chart-calls-desc"/);
    assert.equal(
      textOf(page.body, 'chart-calls-desc'),
      'Calls per hour by outcome over the last 24 hours, test mode: 7 in all: 4 completed, 2 failed: busy, 1 failed: no_answer.',
    );
    assert.deepEqual(barTitles(svg), [
      '24 Nov 08:00–09:00 UTC: 1 completed',
      '24 Nov 10:00–11:00 UTC: 3 completed, 2 failed: busy, 1 failed: no_answer',
    ]);
    assert.equal((svg.match(/<rect class="series-/g) ?? []).length, 4, 'one rect per outcome of each bar');
    assert.equal((svg.match(/<rect class="series-failed-busy"/g) ?? []).length, 1);
    assert.match(svg, />Calls per hour<\/text>/, 'the y axis says its unit');
    assert.match(svg, />Hour \(UTC\)<\/text>/, 'the x axis too');
    assert.match(svg, />10:00<\/text>/, 'the current hour is labelled');
    // The legend, and the table screen readers read.
    assert.match(
      page.body,
      /<ul class="chart-legend" aria-label="[^"]*">.*Completed <strong>4<\/strong>.*Failed: busy <strong>2<\/strong>/s,
    );
    assert.match(textOf(page.body, 'chart-calls-table'), /24 Nov 10:00–11:00 UTC\s*3\s*2\s*1/);
    assert.ok(!page.body.includes('timeout'), 'no failure of another account');
    assert.ok(!page.body.includes('call_chart_other_'), "another account's call ids never appear");
  });

  it('shows webhook deliveries succeeded, retried and failed, and the latency of POST /v1/calls from the rollup', async () => {
    const page = await client.get('/developers?period=24h&mode=test');
    assert.equal(
      textOf(page.body, 'chart-deliveries-desc'),
      'Webhook deliveries of test events per hour over the last 24 hours: 4 in all: 2 succeeded at once, 1 retried, 1 failed. 1 more is waiting for a first attempt.',
    );
    assert.deepEqual(barTitles(chartOf(page.body, 'chart-deliveries')), [
      '24 Nov 07:00–08:00 UTC: 1 failed',
      '24 Nov 10:00–11:00 UTC: 2 succeeded at once, 1 retried',
    ]);
    // 90 × 100 ms and 10 × 2 s: p50 in the bucket up to 2^(54/8) ≈ 107.6 ms, p99 in the one up to 2^11 ms.
    assert.equal(
      textOf(page.body, 'chart-latency-desc'),
      'p50 and p99 latency of POST /v1/calls per hour over the last 24 hours, test mode: 100 requests, p50 108 ms, p99 2,048 ms over the period.',
    );
    const latency = chartOf(page.body, 'chart-latency');
    assert.match(latency, /<circle class="series-p50"[^>]*><title>24 Nov 10:00–11:00 UTC: p50 108 ms<\/title>/);
    assert.match(latency, /<circle class="series-p99"[^>]*><title>24 Nov 10:00–11:00 UTC: p99 2,048 ms<\/title>/);
    assert.match(latency, />Milliseconds<\/text>/);
    assert.match(page.body, /buckets each 9 % wider than the one before/, 'the page says the resolution');
  });

  it('switches to 30 days with a link, per day', async () => {
    const day = await client.get('/developers?period=24h&mode=test');
    assert.match(day.body, /<a href="\/developers\?period=30d&amp;mode=test#activity">Last 30 days<\/a>/);
    assert.match(day.body, /<a href="\/developers\?period=24h&amp;mode=test#activity" aria-current="true">Last 24 hours<\/a>/);
    const page = await client.get('/developers?period=30d&mode=test');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<a href="\/developers\?period=30d&amp;mode=test#activity" aria-current="true">Last 30 days<\/a>/);
    assert.equal(
      textOf(page.body, 'chart-calls-desc'),
      'Calls per day by outcome over the last 30 days, test mode: 13 in all: 10 completed, 2 failed: busy, 1 failed: no_answer.',
    );
    assert.deepEqual(barTitles(chartOf(page.body, 'chart-calls')), [
      '14 Nov 2026 (UTC): 4 completed',
      '22 Nov 2026 (UTC): 2 completed',
      '24 Nov 2026 (UTC): 4 completed, 2 failed: busy, 1 failed: no_answer',
    ]);
    assert.match(chartOf(page.body, 'chart-calls'), />Calls per day<\/text>/);
    assert.match(textOf(page.body, 'chart-latency-desc'), /: 101 requests, p50 108 ms, p99 2,048 ms over the period\.$/);
    assert.match(page.body, /Per day \(UTC\) over the last 30 days/, 'the page explains the daily bars');
  });

  it('switches mode with a link; without one, shows the mode of the latest call', async () => {
    const live = await client.get('/developers?period=24h&mode=live');
    assert.match(live.body, /<a href="\/developers\?period=24h&amp;mode=live#activity" aria-current="true">Live<\/a>/);
    assert.equal(
      textOf(live.body, 'chart-calls-desc'),
      'Calls per hour by outcome over the last 24 hours, live mode: 5 in all: 5 completed.',
    );
    assert.match(textOf(live.body, 'chart-deliveries-desc'), /: 1 in all: 1 succeeded at once\.$/);
    assert.match(textOf(live.body, 'chart-latency-desc'), /: 1 request, p50 5\.19 ms, p99 5\.19 ms over the period\.$/);
    // The latest call (a minute ago) is a test call.
    const plain = await client.get('/developers');
    assert.match(plain.body, /<a href="\/developers\?period=24h&amp;mode=test#activity" aria-current="true">Test<\/a>/);
    assert.match(textOf(plain.body, 'chart-calls-desc'), /test mode: 7 in all/);
    // A period or mode the page does not know is ignored, not refused.
    const unknown = await client.get('/developers?period=7d&mode=prod');
    assert.equal(unknown.statusCode, 200);
    assert.match(textOf(unknown.body, 'chart-calls-desc'), /over the last 24 hours, test mode: 7 in all/);
  });

  it('keeps accounts apart: the other account sees its own calls, deliveries and latency only', async () => {
    const page = await otherClient.get('/developers?period=30d&mode=test');
    assert.equal(
      textOf(page.body, 'chart-calls-desc'),
      'Calls per day by outcome over the last 30 days, test mode: 7 in all: 7 failed: timeout.',
    );
    assert.match(textOf(page.body, 'chart-deliveries-desc'), /: 6 in all: 6 failed\.$/);
    assert.match(textOf(page.body, 'chart-latency-desc'), /: 3 requests, /);
    for (const id of ['call_chart_done_1', 'call_chart_busy_1', 'call_chart_live_1', 'call_chart_10d_1']) {
      assert.ok(!page.body.includes(id), `${id} of the seed account is on another account's overview`);
    }
    assert.ok(!page.body.includes('no_answer'));
  });

  it('draws an empty chart with a clear text for an account without calls', async () => {
    const empty = await t.newAccount({ mode: 'test', agentId: 'agent_empty' });
    const emptyClient = await signedInClient(t, empty);
    for (const [period, words] of [
      ['24h', 'the last 24 hours'],
      ['30d', 'the last 30 days'],
    ] as const) {
      const page = await emptyClient.get(`/developers?period=${period}`);
      assert.equal(page.statusCode, 200);
      assert.equal((chartOf(page.body, 'chart-calls').match(/<rect /g) ?? []).length, 0);
      const empty = { 'chart-calls': 'calls', 'chart-deliveries': 'webhook deliveries', 'chart-latency': 'POST /v1/calls requests' };
      for (const [chart, what] of Object.entries(empty)) {
        assert.match(chartOf(page.body, chart), new RegExp(`<text class="chart-empty"[^>]*>No ${what} in ${words}\\.</text>`));
        // Said once, in its chart: no caption repeating it.
        assert.equal(page.body.split(`No ${what} in ${words}.`).length - 1, 1, `"No ${what}" said once`);
      }
      assert.ok(!page.body.includes('chart-calls-table'), 'no table of nothing');
    }
  });

  it("rolls up the latency of real POST /v1/calls answers by the key's mode, in the batch that logs them", async () => {
    const created = await t.createCall(callBody(t));
    assert.equal(created.statusCode, 201);
    await t.services.requestLog.flush();
    const logged = await t.services.db
      .selectFrom('request_logs')
      .select('created_at')
      .where('id', '=', created.headers['x-request-id'] as string)
      .executeTakeFirstOrThrow();
    const rows = await t.services.db
      .selectFrom('request_latency_hourly')
      .select(['mode', 'count'])
      .where('account_id', '=', t.seed.accountId)
      .where('hour', '=', logged.created_at.slice(0, 13))
      .execute();
    assert.deepEqual(
      rows.map((row) => [row.mode, Number(row.count)]),
      [['live', 1]],
      'the seed key is a live key',
    );
  });
});
