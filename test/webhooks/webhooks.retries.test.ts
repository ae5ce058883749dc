/**
 * When failed deliveries are tried again: the retry schedule with its jitter, a receiver's Retry-After on
 * 429 and 503 (and not on other statuses), and the rule that disables an endpoint whose deliveries have
 * all failed for 5 days, measured on an injected clock.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { enqueueEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import {
  jitterFraction,
  nextDelayMs,
  parseRetryAfterMs,
  retryAfterBoundsMs,
  withJitter,
} from '../../src/features/webhook-delivery/retry-schedule.js';
import { parseDurationList } from '../../src/lib/duration.js';
import { disableAfterFailingMs } from '../../src/features/webhook-delivery/webhook-dispatcher.job.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const second = 1_000;
const minute = 60 * second;
const hour = 60 * minute;
const day = 24 * hour;

describe('retry schedule', () => {
  it('parses a list of durations', () => {
    assert.deepEqual(parseDurationList('5s,5m,30m,2h,1d', 'retry schedule'), [5 * second, 5 * minute, 30 * minute, 2 * hour, day]);
    assert.deepEqual(parseDurationList(' 200ms , 1.5s ', 'retry schedule'), [200, 1_500]);
    assert.deepEqual(parseDurationList('1s,,2s,', 'retry schedule'), [1_000, 2_000]);
  });

  it('refuses an empty schedule and an entry without a unit', () => {
    assert.throws(() => parseDurationList('', 'retry schedule'), /empty/);
    assert.throws(() => parseDurationList(' , ', 'retry schedule'), /empty/);
    assert.throws(() => parseDurationList('5s,5', 'retry schedule'), /"5" is not a duration/);
    assert.throws(() => parseDurationList('5s,soon', 'retry schedule'), /"soon" is not a duration/);
    assert.throws(() => loadConfig({ CALLGATE_WEBHOOK_RETRY_SCHEDULE: '5s,-1s' }), /CALLGATE_WEBHOOK_RETRY_SCHEDULE/);
  });

  it('jitter stays within ±20 % and spreads over that range', () => {
    assert.equal(jitterFraction, 0.2);
    assert.equal(
      withJitter(10_000, () => 0),
      8_000,
    );
    assert.equal(
      withJitter(10_000, () => 0.5),
      10_000,
    );
    assert.equal(
      withJitter(10_000, () => 0.999_999),
      12_000,
    );
    const samples = Array.from({ length: 2_000 }, () => withJitter(10_000));
    assert.ok(samples.every((delay) => delay >= 8_000 && delay <= 12_000));
    assert.ok(Math.min(...samples) < 8_500 && Math.max(...samples) > 11_500, 'the jitter should use its whole range');
  });

  it('gives the scheduled delay after each attempt, then null once the schedule is used up', () => {
    const schedule = [100, 200, 300];
    const exact = () => 0.5;
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((attempts) => nextDelayMs(schedule, attempts, null, exact)),
      [100, 200, 300, null, null],
    );
    // Jitter applies to every scheduled delay.
    assert.equal(
      nextDelayMs(schedule, 3, null, () => 0),
      240,
    );
    // A Retry-After does not extend a schedule that is used up.
    assert.equal(nextDelayMs(schedule, 4, 5_000, exact), null);
  });

  it('a Retry-After replaces the scheduled delay, without jitter, within 1 s and 24 h', () => {
    const schedule = [5 * minute];
    assert.equal(
      nextDelayMs(schedule, 1, 3 * second, () => 0),
      3 * second,
    );
    assert.equal(nextDelayMs(schedule, 1, 0), retryAfterBoundsMs.min);
    assert.equal(nextDelayMs(schedule, 1, 10), 1_000);
    assert.equal(nextDelayMs(schedule, 1, 3 * day), retryAfterBoundsMs.max);
    assert.equal(retryAfterBoundsMs.max, day);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    assert.equal(parseRetryAfterMs('1', now), 1_000);
    assert.equal(parseRetryAfterMs(' 120 ', now), 120_000);
    assert.equal(parseRetryAfterMs('Tue, 01 Jan 2030 00:00:30 GMT', now), 30_000);
    assert.equal(parseRetryAfterMs('Mon, 31 Dec 2029 23:00:00 GMT', now), 0);
    assert.equal(parseRetryAfterMs(undefined, now), null);
    assert.equal(parseRetryAfterMs('', now), null);
    assert.equal(parseRetryAfterMs('soon', now), null);
  });

  it('the default schedule gives 8 attempts over about 28 hours', () => {
    const schedule = loadConfig({}).webhookRetryScheduleMs;
    assert.deepEqual(schedule, [5 * second, 5 * minute, 30 * minute, 2 * hour, 5 * hour, 10 * hour, 10 * hour]);
    let attempts = 1;
    let totalMs = 0;
    for (
      let delay = nextDelayMs(schedule, attempts, null, () => 0.5);
      delay !== null;
      delay = nextDelayMs(schedule, attempts, null, () => 0.5)
    ) {
      attempts++;
      totalMs += delay;
    }
    assert.equal(attempts, 8);
    assert.ok(totalMs > 27 * hour && totalMs < 29 * hour, `${totalMs / hour} h`);
  });
});

/** Queues a `webhook.test` event for one endpoint and wakes the dispatcher. */
async function enqueueFor(t: TestApp, endpointId: string): Promise<string> {
  const { deliveryIds } = await enqueueEvent(t.services.db, t.services.clock, {
    accountId: t.seed.accountId,
    mode: null,
    type: 'webhook.test',
    callId: null,
    data: { endpoint_id: endpointId },
    endpointId,
  });
  t.services.notifier.notify();
  assert.equal(deliveryIds.length, 1);
  return deliveryIds[0]!;
}

await forEachDialect('Retry-After', (dialect) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let endpointId: string;

  before(async () => {
    // Jitter off, so that a scheduled retry comes 100 ms after the failure.
    t = await startTestApp(dialect, {
      env: { CALLGATE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms', CALLGATE_WEBHOOK_TIMEOUT_MS: '2000' },
      startWorker: true,
      overrides: { random: () => 0.5, dispatcherSweepIntervalMs: 20 },
    });
  });
  after(async () => t.close());
  beforeEach(async () => {
    receiver = await startWebhookReceiver();
    endpointId = (await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url })).id;
  });
  afterEach(async () => receiver.close());

  /** The time between the first and the second request of one delivery whose first answer is `first`. */
  const gapAfter = async (first: { status: number; headers?: Record<string, string> }) => {
    receiver.queue(first);
    const deliveryId = await enqueueFor(t, endpointId);
    const [one, two] = await receiver.waitFor(2, 5_000);
    assert.equal(one!.headers['webhook-id'], two!.headers['webhook-id']);
    await t.services.dispatcher.idle();
    const attempts = await t.services.db
      .selectFrom('webhook_attempts')
      .select(['attempt_number', 'status_code'])
      .where('delivery_id', '=', deliveryId)
      .orderBy('attempt_number')
      .execute();
    assert.deepEqual(
      attempts.map((a) => a.status_code),
      [first.status, 200],
    );
    return two!.receivedAt - one!.answeredAt!;
  };

  for (const status of [429, 503]) {
    it(`a ${status} with Retry-After: 1 is tried again about 1 s later, not after the schedule's 100 ms`, async () => {
      const gap = await gapAfter({ status, headers: { 'retry-after': '1' } });
      assert.ok(gap >= 950 && gap < 1_600, `retried after ${gap} ms`);
    });
  }

  it('a 429 without Retry-After follows the schedule', async () => {
    const gap = await gapAfter({ status: 429 });
    assert.ok(gap >= 80 && gap < 600, `retried after ${gap} ms`);
  });

  it('a Retry-After on a 500 is ignored', async () => {
    const gap = await gapAfter({ status: 500, headers: { 'retry-after': '5' } });
    assert.ok(gap >= 80 && gap < 600, `retried after ${gap} ms`);
  });
});

await forEachDialect('Endpoints failing for 5 days', (dialect) => {
  const start = Date.parse('2030-01-01T00:00:00.000Z');
  let clock: ManualClock;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let endpointId: string;

  before(async () => {
    clock = new ManualClock(start);
    // One retry a day (jitter off), more of them than 5 days need.
    t = await startTestApp(dialect, {
      env: { CALLGATE_WEBHOOK_RETRY_SCHEDULE: Array(10).fill('1d').join(','), CALLGATE_WEBHOOK_TIMEOUT_MS: '2000' },
      startWorker: true,
      overrides: { clock, random: () => 0.5, dispatcherSweepIntervalMs: 20 },
    });
  });
  after(async () => t.close());
  beforeEach(async () => {
    clock.set(start);
    receiver = await startWebhookReceiver();
    receiver.fallback = { status: 500, body: 'down' };
    endpointId = (await createEndpoint(t.services.db, clock, true, { accountId: t.seed.accountId, url: receiver.url })).id;
  });
  afterEach(async () => receiver.close());

  const endpoint = () =>
    t.services.db
      .selectFrom('webhook_endpoints')
      .select(['enabled', 'disabled_reason', 'failing_since'])
      .where('id', '=', endpointId)
      .executeTakeFirstOrThrow();
  const delivery = (id: string) =>
    t.services.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'attempt_count', 'last_error'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
  /** Waits for the receiver's `count`th request and for its result to be written. */
  const attempted = async (count: number) => {
    await receiver.waitFor(count, 5_000);
    await t.services.dispatcher.idle();
  };
  /** Moves the clock to the next daily retry (a second past it) and waits for that attempt. */
  const nextDay = async () => {
    clock.advance(day + second);
    await attempted(receiver.received.length + 1);
  };
  const iso = (ms: number) => new Date(ms).toISOString();

  it('an endpoint whose deliveries failed for 5 days is disabled, its pending deliveries end, and then it gets nothing', async () => {
    const deliveryId = await enqueueFor(t, endpointId);
    await attempted(1);
    assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: iso(start) });
    for (let days = 1; days <= 4; days++) {
      await nextDay();
      assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: iso(start) }, `day ${days}`);
    }
    // Another delivery, attempted once and waiting for a retry weeks away.
    const laterId = await enqueueFor(t, endpointId);
    await attempted(6);
    await t.services.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: iso(start + 30 * day) })
      .where('id', '=', laterId)
      .execute();
    // The sixth attempt of the first comes 5 days and 5 seconds after the first failure.
    await nextDay();
    assert.ok(clock.now().getTime() - start >= disableAfterFailingMs);
    const disabled = await endpoint();
    assert.equal(disabled.enabled, 0);
    assert.match(disabled.disabled_reason ?? '', /5 days/);
    assert.match(disabled.disabled_reason ?? '', new RegExp(iso(start).replace(/\./g, '\\.')));
    // The failure that disabled the endpoint ends its delivery; the other ends with the reason, unsent.
    assert.deepEqual(await delivery(deliveryId), { status: 'failed', attempt_count: 6, last_error: 'HTTP 500' });
    assert.deepEqual(await delivery(laterId), { status: 'failed', attempt_count: 1, last_error: disabled.disabled_reason });

    clock.advance(day + second);
    await sleep(100);
    assert.equal(receiver.received.length, 7);
    // New events no longer get a delivery to it.
    await enqueueEvent(t.services.db, clock, { accountId: t.seed.accountId, mode: 'live', type: 'call.completed', callId: null, data: {} });
    t.services.notifier.notify();
    await sleep(100);
    assert.equal(receiver.received.length, 7);
  });

  it('a success in between resets the failure clock', async () => {
    await enqueueFor(t, endpointId);
    await attempted(1);
    for (let days = 1; days <= 3; days++) await nextDay();
    assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: iso(start) });

    // Day 4: the receiver is back for one request; the first delivery succeeds.
    receiver.queue({ status: 200 });
    await nextDay();
    assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: null });

    // A new event fails from day 4 on: the failure clock starts there, not on day 0.
    const failingAgainAt = clock.now().getTime();
    await enqueueFor(t, endpointId);
    await attempted(receiver.received.length + 1);
    assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: iso(failingAgainAt) });
    for (let days = 5; days <= 8; days++) {
      await nextDay();
      // On day 5 and later the endpoint would be disabled had the success not reset the clock.
      assert.deepEqual(await endpoint(), { enabled: 1, disabled_reason: null, failing_since: iso(failingAgainAt) }, `day ${days}`);
    }
    // Day 9: 5 days after the failures started again.
    await nextDay();
    const disabled = await endpoint();
    assert.equal(disabled.enabled, 0);
    assert.match(disabled.disabled_reason ?? '', /5 days/);
  });
});
