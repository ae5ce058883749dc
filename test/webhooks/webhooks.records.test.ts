/**
 * What a delivery carries and what is kept of it, on an injected clock: after a secret rotation the old
 * secret signs beside the new one for 24 hours and then stops; each attempt keeps the first 2 KB of the
 * receiver's answer; an attempt whose claim was lost is not recorded.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config.js';
import { createEndpoint, getEndpoint, rotateSecret, secretOverlapMs } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { releaseClaims } from '../../src/features/webhook-delivery/dispatcher.repository.js';
import { claimDueDeliveries, recordAttempts, type AttemptRecord } from '../../src/features/webhook-delivery/dispatcher.service.js';
import { enqueueEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import { responseExcerptBytes } from '../../src/features/webhook-delivery/webhook-sender.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

it('an attempt times out after 10 s unless CALLGATE_WEBHOOK_TIMEOUT_MS says otherwise', () => {
  assert.equal(loadConfig({}).webhookTimeoutMs, 10_000);
  assert.equal(loadConfig({ CALLGATE_WEBHOOK_TIMEOUT_MS: '2500' }).webhookTimeoutMs, 2_500);
  assert.throws(() => loadConfig({ CALLGATE_WEBHOOK_TIMEOUT_MS: 'soon' }), /CALLGATE_WEBHOOK_TIMEOUT_MS/);
});

await forEachDialect('Delivery records and secret rotation', (dialect) => {
  const start = Date.parse('2030-01-01T00:00:00.000Z');
  const hour = 3_600_000;
  let clock: ManualClock;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let endpointId: string;
  let firstSecret: string;

  before(async () => {
    clock = new ManualClock(start);
    t = await startTestApp(dialect, { startWorker: true, overrides: { clock, dispatcherSweepIntervalMs: 20 } });
  });
  after(async () => t.close());
  beforeEach(async () => {
    clock.set(start);
    receiver = await startWebhookReceiver();
    const endpoint = await createEndpoint(t.services.db, clock, true, { accountId: t.seed.accountId, url: receiver.url });
    endpointId = endpoint.id;
    firstSecret = endpoint.secret;
  });
  afterEach(async () => receiver.close());

  /** Queues a test event for the endpoint and returns its request as received, once its attempt is recorded. */
  const deliverOne = async (): Promise<{ hook: ReceivedWebhook; deliveryId: string }> => {
    const before = receiver.received.length;
    const { deliveryIds } = await enqueueEvent(t.services.db, clock, {
      accountId: t.seed.accountId,
      mode: null,
      type: 'webhook.test',
      callId: null,
      data: { endpoint_id: endpointId },
      endpointId,
    });
    t.services.notifier.notify();
    const hook = (await receiver.waitFor(before + 1, 5_000))[before]!;
    await t.services.dispatcher.idle();
    return { hook, deliveryId: deliveryIds[0]! };
  };
  const verifies = (secret: string, hook: ReceivedWebhook) => {
    try {
      // The clock is in 2030: check the signature against the attempt's own timestamp.
      new Webhook(secret).verify(hook.body, hook.headers as Record<string, string>);
      return true;
    } catch (error) {
      if (/timestamp/i.test((error as Error).message)) throw error;
      return false;
    }
  };

  it('after a rotation the old secret signs beside the new one for 24 hours, then only the new one', async () => {
    const rotated = await rotateSecret(t.services.db, clock, (await getEndpoint(t.services.db, endpointId))!);
    assert.equal(secretOverlapMs, 24 * hour);

    const sign = (hook: ReceivedWebhook) => String(hook.headers['webhook-signature']).split(' ');
    const ts = (hook: ReceivedWebhook) => Number(hook.headers['webhook-timestamp']);
    const withMock = async () => {
      // standardwebhooks checks the timestamp against the real clock; compare at the attempt's time.
      const realNow = Date.now;
      const { hook } = await deliverOne();
      Date.now = () => ts(hook) * 1000;
      try {
        return { hook, signatures: sign(hook), old: verifies(firstSecret, hook), current: verifies(rotated.secret, hook) };
      } finally {
        Date.now = realNow;
      }
    };

    clock.set(start + 23 * hour + 59 * 60_000);
    const during = await withMock();
    assert.equal(ts(during.hook), Math.floor(clock.now().getTime() / 1000));
    assert.equal(during.signatures.length, 2);
    assert.deepEqual([during.old, during.current], [true, true]);

    clock.set(start + 24 * hour + 1_000);
    const afterOverlap = await withMock();
    assert.equal(afterOverlap.signatures.length, 1);
    assert.deepEqual([afterOverlap.old, afterOverlap.current], [false, true]);
  });

  it('an attempt keeps the first 2 KB of the answer, not the rest', async () => {
    assert.equal(responseExcerptBytes, 2_048);
    const body = `${'a'.repeat(2_000)}${'b'.repeat(48)}${'c'.repeat(5_000)}`;
    receiver.queue({ status: 500, body }, { status: 200, body: 'short' });
    const { deliveryId } = await deliverOne();
    clock.advance(60_000);
    await receiver.waitFor(2, 5_000);
    await t.services.dispatcher.idle();
    const attempts = await t.services.db
      .selectFrom('webhook_attempts')
      .select(['attempt_number', 'status_code', 'response_excerpt'])
      .where('delivery_id', '=', deliveryId)
      .orderBy('attempt_number')
      .execute();
    assert.deepEqual(attempts, [
      { attempt_number: 1, status_code: 500, response_excerpt: body.slice(0, 2_048) },
      { attempt_number: 2, status_code: 200, response_excerpt: 'short' },
    ]);
  });
});

await forEachDialect('Results of a lost claim', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  it('an attempt that ends after its claim was released (shutdown) records nothing; the delivery stays pending', async () => {
    const claimOf = (workerId: string, now: string) => ({
      workerId,
      now,
      leaseUntil: '2030-01-01T00:01:00.000Z',
      limit: 10,
      perEndpoint: 4,
    });
    const backoff = { now: new Date('2030-01-01T00:00:01.000Z'), firstWaitMs: 5_000 };
    const clock = new ManualClock(Date.parse('2030-01-01T00:00:00.000Z'));
    const endpoint = await createEndpoint(t.services.db, clock, true, { accountId: t.seed.accountId, url: 'http://127.0.0.1:9/hook' });
    const { deliveryIds } = await enqueueEvent(t.services.db, clock, {
      accountId: t.seed.accountId,
      mode: null,
      type: 'webhook.test',
      callId: null,
      data: { endpoint_id: endpoint.id },
      endpointId: endpoint.id,
    });
    const deliveryId = deliveryIds[0]!;
    const now = '2030-01-01T00:00:01.000Z';
    const claimed = await claimDueDeliveries(t.services.db, claimOf('wkr_a', now));
    assert.deepEqual(
      claimed.map((delivery) => delivery.id),
      [deliveryId],
    );
    await releaseClaims(t.services.db, 'wkr_a', [deliveryId]);
    const result = (workerId: string, attemptId: string): AttemptRecord => ({
      attempt: {
        id: attemptId,
        delivery_id: deliveryId,
        attempt_number: 1,
        url: endpoint.url,
        attempted_at: now,
        status_code: null,
        duration_ms: 5,
        response_excerpt: null,
        error: 'socket hang up',
      },
      deliveryId,
      workerId,
      delivery: { status: 'pending', attempt_count: 1, last_error: 'socket hang up', next_attempt_at: now, updated_at: now },
      endpointId: endpoint.id,
      endpoint: null,
    });
    await recordAttempts(t.services.db, [result('wkr_a', 'att_lost')], backoff);
    const attemptsOf = () =>
      t.services.db.selectFrom('webhook_attempts').select(['id', 'status_code']).where('delivery_id', '=', deliveryId).execute();
    assert.deepEqual(await attemptsOf(), []);
    const row = await t.services.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', deliveryId).executeTakeFirstOrThrow();
    assert.equal(row.attempt_count, 0);
    assert.equal(row.status, 'pending');
    assert.equal(row.locked_by, null);

    // The worker that holds the claim records its attempt as before.
    await claimDueDeliveries(t.services.db, claimOf('wkr_b', now));
    await recordAttempts(t.services.db, [result('wkr_b', 'att_kept')], backoff);
    assert.deepEqual(await attemptsOf(), [{ id: 'att_kept', status_code: null }]);
  });
});
