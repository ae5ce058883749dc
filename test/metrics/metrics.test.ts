/**
 * GET /metrics through the real app on both databases: the text parses, the counters move with the traffic
 * that should move them (requests, calls placed and ended, idempotency, refusals, jobs, webhooks), the
 * token guards it, and no id, token, URL or phone number ever becomes a label.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import { parsePrometheusText, sampleValue, type Sample } from '../support/prometheus-text.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

async function scrape(t: TestApp, headers: Record<string, string> = {}): Promise<{ res: LightMyRequestResponse; samples: Sample[] }> {
  const res = await t.inject({ method: 'GET', url: '/metrics', headers });
  return { res, samples: res.statusCode === 200 ? parsePrometheusText(res.body) : [] };
}

async function value(t: TestApp, name: string, labels: Record<string, string> = {}): Promise<number> {
  const { samples } = await scrape(t);
  return sampleValue(samples, name, labels) ?? 0;
}

await forEachDialect('GET /metrics', (dialect) => {
  describe('counts what happens', () => {
    let t: TestApp;
    let receiver: WebhookReceiver;
    before(async () => {
      receiver = await startWebhookReceiver();
      t = await startTestApp(dialect, {
        startWorker: true,
        overrides: { monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 },
      });
      await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
    });
    after(async () => {
      await t.close();
      await receiver.close();
    });

    it('answers the Prometheus text format with Node’s process metrics', async () => {
      const { res, samples } = await scrape(t);
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      assert.ok((sampleValue(samples, 'process_cpu_user_seconds_total') ?? -1) >= 0);
      assert.ok((sampleValue(samples, 'nodejs_heap_size_used_bytes') ?? 0) > 0);
      assert.ok(res.body.includes('# TYPE callgate_http_request_duration_seconds histogram'));
    });

    it('counts requests by route pattern, method and status, with their latency', async () => {
      const labels = { route: '/v1/calls/:id', method: 'GET', status: '404' };
      const before = await value(t, 'callgate_http_requests_total', labels);
      const res = await t.inject({ method: 'GET', url: '/v1/calls/call_nope', headers: { authorization: `Bearer ${t.seed.token}` } });
      assert.equal(res.statusCode, 404);
      const { samples } = await scrape(t);
      assert.equal(sampleValue(samples, 'callgate_http_requests_total', labels), before + 1);
      assert.equal(sampleValue(samples, 'callgate_http_request_duration_seconds_count', labels), before + 1);
      assert.equal(sampleValue(samples, 'callgate_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), before + 1);
    });

    it('counts each request once: on a GET route, on the HEAD route beside it, on no route', async () => {
      const cases = [
        { request: { method: 'GET', url: '/healthz' }, labels: { route: '/healthz', method: 'GET', status: '200' } },
        { request: { method: 'HEAD', url: '/healthz' }, labels: { route: '/healthz', method: 'HEAD', status: '200' } },
        { request: { method: 'GET', url: '/no-such-page' }, labels: { route: 'unmatched', method: 'GET', status: '404' } },
      ] as const;
      for (const { request, labels } of cases) {
        const before = await value(t, 'callgate_http_requests_total', labels);
        await t.inject(request);
        assert.equal(await value(t, 'callgate_http_requests_total', labels), before + 1, JSON.stringify(labels));
      }
    });

    it('counts a call placed and ended by provider and outcome, the provider’s latency, the jobs and the webhook attempt', async () => {
      const created = await t.createCall(callBody(t));
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(await value(t, 'callgate_calls_placed_total', { provider: 'simulator', outcome: 'placed' }), 1);
      assert.equal(
        await value(t, 'callgate_provider_request_duration_seconds_count', { provider: 'simulator', operation: 'place_call' }),
        1,
      );
      await eventually('the call counted as ended', async () =>
        (await value(t, 'callgate_calls_ended_total', { provider: 'simulator', outcome: 'completed' })) === 1 ? true : undefined,
      );
      await eventually('the webhook attempt counted', async () =>
        (await value(t, 'callgate_webhook_attempts_total', { result: 'succeeded' })) >= 1 ? true : undefined,
      );
      const { samples } = await scrape(t);
      assert.ok((sampleValue(samples, 'callgate_job_passes_total', { job: 'call-monitor', result: 'ok' }) ?? 0) > 0);
      assert.ok((sampleValue(samples, 'callgate_job_claims_total', { job: 'call-monitor' }) ?? 0) >= 1);
      assert.ok((sampleValue(samples, 'callgate_job_claims_total', { job: 'webhook-dispatcher' }) ?? 0) >= 1);
      assert.ok((sampleValue(samples, 'callgate_job_pass_duration_seconds_count', { job: 'webhook-dispatcher' }) ?? 0) > 0);
      // The dispatcher was woken by the call's event (the notifier), by its sweep, and by its own attempt ending
      // (once the attempt is recorded, just after it was counted).
      await eventually('a wake-up of the dispatcher from each source', async () => {
        const wakeups = (await scrape(t)).samples;
        const sources = ['signal', 'sweep', 'job'];
        return sources.every(
          (source) => (sampleValue(wakeups, 'callgate_job_wakeups_total', { job: 'webhook-dispatcher', source }) ?? 0) >= 1,
        )
          ? true
          : undefined;
      });
      assert.equal(sampleValue(samples, 'callgate_webhook_workers_live'), 1, 'this process is the one dispatcher');
      const lag = sampleValue(samples, 'callgate_job_seconds_since_last_pass', { job: 'webhook-dispatcher' });
      assert.ok(lag !== undefined && lag >= 0 && lag < 30, `lag ${lag}`);
      // The attempt is counted when its answer comes; the delivery's row is written just after, in a batch.
      await eventually('the backlog to read empty', async () => {
        const backlog = (await scrape(t)).samples;
        const pending = sampleValue(backlog, 'callgate_webhook_deliveries_pending');
        const oldest = sampleValue(backlog, 'callgate_webhook_oldest_due_age_seconds');
        return pending === 0 && oldest === 0 ? true : undefined;
      });
    });

    it('reads the webhook backlog at scrape time: pending deliveries and the age of the oldest due one', async () => {
      const dueAt = new Date(Date.now() - 90_000).toISOString();
      const delivered = await t.services.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
      // A second delivery of the delivered event, due 90 s ago and leased to a worker that is elsewhere, so
      // that this process's dispatcher leaves it alone until the scrape.
      await t.services.db
        .insertInto('webhook_deliveries')
        .values({
          ...delivered,
          id: 'dlv_metrics_backlog',
          status: 'pending',
          attempt_count: 0,
          next_attempt_at: dueAt,
          locked_by: 'wkr_elsewhere',
          locked_until: new Date(Date.now() + 600_000).toISOString(),
        })
        .execute();
      const { samples } = await scrape(t);
      assert.equal(sampleValue(samples, 'callgate_webhook_deliveries_pending'), 1);
      const age = sampleValue(samples, 'callgate_webhook_oldest_due_age_seconds')!;
      assert.ok(age >= 90 && age < 150, `age ${age}`);
      await t.services.db.deleteFrom('webhook_deliveries').where('id', '=', 'dlv_metrics_backlog').execute();
    });

    it('counts idempotent replays and conflicts', async () => {
      const headers = { idempotencyKey: 'metrics-key-1' };
      assert.equal((await t.createCall(callBody(t), headers)).statusCode, 201);
      assert.equal((await t.createCall(callBody(t), headers)).statusCode, 201);
      assert.equal((await t.createCall(callBody(t, { to: '+14155550199' }), headers)).statusCode, 409);
      const { samples } = await scrape(t);
      assert.equal(sampleValue(samples, 'callgate_idempotency_requests_total', { result: 'owned' }), 1);
      assert.equal(sampleValue(samples, 'callgate_idempotency_requests_total', { result: 'replay' }), 1);
      assert.equal(sampleValue(samples, 'callgate_idempotency_requests_total', { result: 'conflict' }), 1);
    });

    it('counts a duplicate that waited for the first request with its key', async () => {
      const before = await value(t, 'callgate_idempotency_waits_total');
      const key = 'metrics-key-wait';
      const [first, second] = await Promise.all([
        t.createCall(callBody(t), { idempotencyKey: key }),
        t.createCall(callBody(t), { idempotencyKey: key }),
      ]);
      assert.deepEqual([first.statusCode, second.statusCode], [201, 201]);
      // The two raced: one held the key, the other either waited for it or came after it ended (a replay).
      const waited = (await value(t, 'callgate_idempotency_waits_total')) - before;
      const replays = await value(t, 'callgate_idempotency_requests_total', { result: 'replay' });
      assert.ok(waited === 1 || replays === 2, `waited ${waited}, replays ${replays}`);
    });

    it('keeps labels bounded: many ids and unknown paths make a few series, and no id, token or number appears', async () => {
      const auth = { authorization: `Bearer ${t.seed.token}` };
      const ids = Array.from({ length: 60 }, (_, index) => `call_metricsprobe${index}x`);
      for (const id of ids) await t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: auth });
      for (let index = 0; index < 60; index++) {
        await t.inject({ method: 'GET', url: `/probe-${index}/zz${index}?to=%2B1415555${index}`, headers: auth });
        await t.inject({ method: 'DELETE', url: `/v1/unknown-${index}`, headers: auth });
      }
      const { res, samples } = await scrape(t);
      const series = samples.filter((sample) => sample.name === 'callgate_http_requests_total');
      assert.ok(series.length <= 25, `${series.length} series: ${JSON.stringify(series.map((s) => s.labels))}`);
      assert.ok(series.some((sample) => sample.labels.route === 'unmatched'));
      for (const id of ids) assert.ok(!res.body.includes(id), `${id} in the metrics`);
      assert.ok(!/probe-\d|unknown-\d|zz\d/.test(res.body), 'a raw path in the metrics');
      assert.ok(!res.body.includes(t.seed.token) && !res.body.includes(t.seed.keyId), 'a key in the metrics');
      assert.ok(!res.body.includes(t.seed.accountId), 'an account id in the metrics');
      assert.ok(!/\+1415555|4155550123/.test(res.body), 'a phone number in the metrics');
      assert.ok(!res.body.includes(receiver.url) && !res.body.includes('127.0.0.1'), 'a URL in the metrics');
      const labelNames = new Set(
        samples.filter((sample) => sample.name.startsWith('callgate_')).flatMap((sample) => Object.keys(sample.labels)),
      );
      const allowed = [
        'route',
        'method',
        'status',
        'code',
        'provider',
        'outcome',
        'operation',
        'kind',
        'result',
        'reason',
        'job',
        'source',
        'le',
      ];
      assert.deepEqual(
        [...labelNames].filter((name) => !allowed.includes(name)),
        [],
      );
    });
  });

  describe('refusals by error code', () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { env: { CALLGATE_RATE_LIMIT_PER_MINUTE: '2' } });
    });
    after(() => t.close());

    it('counts 429s by their code', async () => {
      const statuses: number[] = [];
      for (let index = 0; index < 3; index++) {
        statuses.push(
          (await t.inject({ method: 'GET', url: '/v1/calls', headers: { authorization: `Bearer ${t.seed.token}` } })).statusCode,
        );
      }
      assert.deepEqual(statuses, [200, 200, 429]);
      assert.equal(await value(t, 'callgate_http_refusals_total', { code: 'rate_limit_exceeded' }), 1);
      assert.equal(await value(t, 'callgate_http_requests_total', { route: '/v1/calls', method: 'GET', status: '429' }), 1);
    });
  });

  describe('with CALLGATE_METRICS_TOKEN', () => {
    const token = 'metrics-token-0123456789abcdef';
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { env: { CALLGATE_METRICS_TOKEN: token } });
    });
    after(() => t.close());

    it('refuses a scrape without the token, or with another, in the error shape', async () => {
      for (const headers of [
        {} as Record<string, string>,
        { authorization: 'Bearer metrics-token-0123456789abcdeX' },
        { authorization: `Basic ${token}` },
      ]) {
        const { res } = await scrape(t, headers);
        assert.equal(res.statusCode, 401);
        const body = res.json();
        assert.equal(body.error, 'unauthorized');
        assert.match(body.message, /CALLGATE_METRICS_TOKEN/);
        assert.match(body.request_id, /^req_/);
        assert.ok(!res.body.includes('callgate_http'));
      }
    });

    it('answers with the token', async () => {
      const { res, samples } = await scrape(t, { authorization: `Bearer ${token}` });
      assert.equal(res.statusCode, 200);
      assert.ok(samples.length > 0);
    });
  });
});
