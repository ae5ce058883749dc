import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, afterEach, before, beforeEach, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createEndpoint, getEndpoint, rotateSecret } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import {
  callEventFields,
  callFailedEventFields,
  startWebhookReceiver,
  verifyWebhook,
  type WebhookReceiver,
} from '../support/webhook-receiver.js';

const env = {
  CALLGATE_SIMULATOR_DELAY_MS: '30',
  CALLGATE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
  CALLGATE_WEBHOOK_TIMEOUT_MS: '300',
};

await forEachDialect('Webhook delivery', (dialect) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let secret: string;
  let endpointId: string;

  before(async () => {
    // Jitter off (random = 0.5) so that retry timing is exact.
    t = await startTestApp(dialect, {
      env,
      startWorker: true,
      overrides: { random: () => 0.5, monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 },
    });
  });
  after(async () => t.close());
  beforeEach(async () => {
    receiver = await startWebhookReceiver();
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
    secret = endpoint.secret;
    endpointId = endpoint.id;
  });
  afterEach(async () => {
    const endpoint = await getEndpoint(t.services.db, endpointId);
    if (endpoint) {
      await t.services.db
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, deleted_at: new Date().toISOString() })
        .where('id', '=', endpointId)
        .execute();
    }
    await receiver.close();
  });

  it('delivers call.completed signed per Standard Webhooks, with exactly the fields of spec 6', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const [hook] = await receiver.waitFor(1);
    assert.ok(hook);
    const payload = verifyWebhook(hook, secret);
    assert.match(payload.id, /^evt_/);
    assert.equal(hook.headers['webhook-id'], payload.id);
    assert.equal(payload.type, 'call.completed');
    assert.match(payload.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual(Object.keys(payload.data).sort(), callEventFields);
    assert.equal(payload.data.id, created.id);
    assert.equal(payload.data.agent_id, t.seed.agentId);
    assert.equal(payload.data.status, 'completed');
    assert.ok(Number.isInteger(payload.data.duration_seconds));
    // The call's times lie within its life: after its creation, and not after the event that reports them.
    assert.ok(Date.parse(payload.data.started_at) >= Date.parse(created.created_at), 'started after it was created');
    assert.ok(Date.parse(payload.data.ended_at) <= Date.parse(payload.created_at), 'ended before the event about it');
    assert.equal(Date.parse(payload.data.ended_at) - Date.parse(payload.data.started_at), payload.data.duration_seconds * 1000);
    assert.equal(hook.headers['content-type'], 'application/json');
    assert.ok(Math.abs(Number(hook.headers['webhook-timestamp']) - Date.now() / 1000) < 5);
  });

  it('a changed body or timestamp does not verify', async () => {
    await t.createCall(callBody(t));
    const [hook] = await receiver.waitFor(1);
    assert.ok(hook);
    const wh = new Webhook(secret);
    const headers = {
      'webhook-id': String(hook.headers['webhook-id']),
      'webhook-timestamp': String(hook.headers['webhook-timestamp']),
      'webhook-signature': String(hook.headers['webhook-signature']),
    };
    assert.throws(() => wh.verify(hook.body.replace('completed', 'failed'), headers));
    assert.throws(() => wh.verify(hook.body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }));
    assert.throws(() => new Webhook(Buffer.from('another secret of enough length!').toString('base64')).verify(hook.body, headers));
  });

  it('delivers call.failed for the busy magic number', async () => {
    const created = (await t.createCall(callBody(t, { to: '+15005550001' }))).json();
    const [hook] = await receiver.waitFor(1);
    const payload = verifyWebhook(hook!, secret);
    assert.equal(payload.type, 'call.failed');
    assert.deepEqual(Object.keys(payload.data).sort(), callFailedEventFields);
    assert.equal(payload.data.id, created.id);
    assert.equal(payload.data.status, 'failed');
    assert.equal(payload.data.failure_reason, 'busy');
  });

  it('500, 500, then 200: three attempts with the same webhook-id, then delivered', async () => {
    receiver.queue({ status: 500 }, { status: 500 });
    await t.createCall(callBody(t));
    const hooks = await receiver.waitFor(3);
    assert.equal(new Set(hooks.map((hook) => hook.headers['webhook-id'])).size, 1);
    for (const hook of hooks) verifyWebhook(hook, secret);
    await t.services.dispatcher.idle();
    await sleep(50);
    const delivery = await t.services.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirstOrThrow();
    assert.equal(delivery.status, 'succeeded');
    assert.equal(delivery.attempt_count, 3);
    const attempts = await t.services.db
      .selectFrom('webhook_attempts')
      .selectAll()
      .where('delivery_id', '=', delivery.id)
      .orderBy('attempt_number')
      .execute();
    assert.deepEqual(
      attempts.map((a) => a.status_code),
      [500, 500, 200],
    );
    assert.ok(attempts.every((a) => a.duration_ms >= 0 && a.attempted_at));
    assert.equal(attempts[2]!.response_excerpt, 'ok');
    // Retries followed the schedule: 100 ms apart at least.
    assert.ok(hooks[1]!.receivedAt - hooks[0]!.receivedAt >= 90);
  });

  it('a receiver that times out is retried; after the last attempt the delivery is failed', async () => {
    receiver.fallback = { status: 200, delayMs: 1_000 };
    await t.createCall(callBody(t));
    await receiver.waitFor(4, 10_000);
    const deadline = Date.now() + 5_000;
    let delivery;
    do {
      await sleep(50);
      delivery = await t.services.db
        .selectFrom('webhook_deliveries')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .executeTakeFirstOrThrow();
    } while (delivery.status === 'pending' && Date.now() < deadline);
    assert.equal(delivery.status, 'failed');
    assert.equal(delivery.attempt_count, 4);
    assert.match(delivery.last_error ?? '', /timed out/);
  });

  it('a 410 Gone disables the endpoint', async () => {
    receiver.queue({ status: 410 });
    await t.createCall(callBody(t));
    await receiver.waitFor(1);
    await t.services.dispatcher.idle();
    await sleep(50);
    const endpoint = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpointId).executeTakeFirstOrThrow();
    assert.equal(endpoint.enabled, 0);
    assert.match(endpoint.disabled_reason ?? '', /410/);
    // A disabled endpoint gets nothing more.
    await t.createCall(callBody(t));
    await sleep(300);
    assert.equal(receiver.received.length, 1);
  });

  it('a receiver that is down and comes back gets the event', async () => {
    await receiver.stop();
    await t.createCall(callBody(t));
    await sleep(150);
    await receiver.restart();
    const [hook] = await receiver.waitFor(1, 5_000);
    verifyWebhook(hook!, secret);
  });

  it('after a secret rotation, deliveries verify with the old and with the new secret', async () => {
    const endpoint = await getEndpoint(t.services.db, endpointId);
    const rotated = await rotateSecret(t.services.db, t.services.clock, endpoint!);
    await t.createCall(callBody(t));
    const [hook] = await receiver.waitFor(1);
    assert.equal(String(hook!.headers['webhook-signature']).split(' ').length, 2);
    verifyWebhook(hook!, secret);
    verifyWebhook(hook!, rotated.secret);
  });

  it("an account's events never reach another account's endpoint", async () => {
    const other = await t.newAccount({ agentId: 'agent_other' });
    const otherReceiver = await startWebhookReceiver();
    try {
      await createEndpoint(t.services.db, t.services.clock, true, { accountId: other.accountId, url: otherReceiver.url });
      await t.createCall(callBody(t));
      await receiver.waitFor(1);
      await sleep(200);
      assert.equal(otherReceiver.received.length, 0);
      await t.createCall({ agent_id: other.agentId, to: '+14155550123' }, { token: other.token });
      await otherReceiver.waitFor(1);
      await sleep(200);
      assert.equal(receiver.received.length, 1);
    } finally {
      await otherReceiver.close();
    }
  });
});
