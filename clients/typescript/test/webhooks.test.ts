/**
 * webhooks.verify on deliveries the real server sent to a local receiver (worker running), on SQLite and
 * PostgreSQL: a genuine delivery verifies and parses into the event that events.retrieve and events.list
 * answer; a changed body, a wrong secret, a missing header and an old timestamp throw.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createEndpoint } from '../../../src/features/webhook-endpoints/endpoints.service.js';
import { simulatorMagicNumbers } from '../../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import { Callgate, CallgateError, WebhookVerificationError, verifyWebhook, webhooks } from '../src/index.js';

function refusal(run: () => unknown): WebhookVerificationError {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    assert.ok(error instanceof CallgateError);
    assert.equal(error.code, 'webhook_verification_failed');
    assert.equal(error.status, null);
    assert.equal(error.request_id, null);
    return error;
  }
  assert.fail('expected verification to fail');
}

await forEachDialect('TypeScript client: webhooks.verify on real deliveries', (dialect) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let secret: string;
  let callgate: Callgate;

  before(async () => {
    t = await startTestApp(dialect, { startWorker: true, overrides: { monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 } });
    receiver = await startWebhookReceiver();
    secret = (await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url })).secret;
    callgate = new Callgate({ apiKey: t.seed.token, baseUrl: await listenOnFreePort(t.app) });
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  it('a delivery verifies into its typed event, the one the events API answers; a tampered one throws', async () => {
    const completed = await callgate.calls.create({ agent_id: t.seed.agentId, to: '+14155550601', metadata: { n: 1 } });
    const [hook] = await receiver.waitFor(1);
    const event = callgate.webhooks.verify(hook!.body, hook!.headers, secret);
    assert.equal(event.type, 'call.completed');
    if (event.type !== 'call.completed') return;
    // Narrowed by `type`: the completed call's fields are typed.
    assert.equal(event.data.id, completed.id);
    assert.equal(event.data.status, 'completed');
    assert.equal(typeof event.data.duration_seconds, 'number');
    assert.equal(event.id, hook!.headers['webhook-id']);

    // The same event from the events API, and in its list.
    assert.deepEqual({ ...(await callgate.events.retrieve(event.id)) }, event);
    const listed = await callgate.events.list({ type: 'call.completed' }).toArray();
    assert.deepEqual(
      listed.map((e) => e.id),
      [event.id],
    );

    // Bytes verify as well as text; a Headers object as well as Node's headers.
    const headers = new Headers(Object.entries(hook!.headers).map(([name, value]) => [name, String(value)]));
    assert.deepEqual(verifyWebhook(new TextEncoder().encode(hook!.body), headers, secret), event);

    const tampered = hook!.body.replace('"completed"', '"failed"');
    assert.notEqual(tampered, hook!.body);
    assert.match(refusal(() => webhooks.verify(tampered, hook!.headers, secret)).message, /did not verify/);
    refusal(() =>
      webhooks.verify(hook!.body, hook!.headers, `whsec_${Buffer.from('another secret of 32 bytes......').toString('base64')}`),
    );
    refusal(() => webhooks.verify(hook!.body, { ...hook!.headers, 'webhook-signature': undefined }, secret));
    // Signed correctly, but ten minutes ago: a replayed capture.
    const old = new Date(Date.now() - 600_000);
    const oldHeaders = {
      'webhook-id': String(hook!.headers['webhook-id']),
      'webhook-timestamp': String(Math.floor(old.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(String(hook!.headers['webhook-id']), old, hook!.body),
    };
    refusal(() => webhooks.verify(hook!.body, oldHeaders, secret));
  });

  it('a failed call arrives as call.failed with its failure_reason', async () => {
    const failed = await callgate.calls.create({ agent_id: t.seed.agentId, to: simulatorMagicNumbers.busy });
    const hooks = await receiver.waitFor(2);
    const event = webhooks.verify(hooks[1]!.body, hooks[1]!.headers, secret);
    assert.equal(event.type, 'call.failed');
    if (event.type !== 'call.failed') return;
    assert.equal(event.data.id, failed.id);
    assert.equal(event.data.failure_reason, 'busy');
  });
});
