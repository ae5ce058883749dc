/**
 * One slow receiver never holds back anyone else: at most CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY attempts in
 * flight to one endpoint, endpoints in turn, and an endpoint that stops answering backs off as a whole until
 * a probe is answered. Timings are scaled down from the (a 10 s timeout, an answer after 8 s) to a
 * 1.5 s timeout and an answer after 1 s.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, it } from 'node:test';
import { enqueueEvents } from '../../src/features/webhook-delivery/fan-out.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { cliEnv, runCli, runJson } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient } from '../support/portal-client.js';
import { callBody, startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';
import { mostOpenAtOnce, startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import { until } from '../support/wait.js';

const timeoutMs = 1_500;
/** When the dispatcher gave up on a request at the latest, counted from its receipt (a margin for its way in). */
const givenUpAfterMs = timeoutMs - 300;
const env = {
  CALLGATE_SIMULATOR_DELAY_MS: '30',
  CALLGATE_WEBHOOK_TIMEOUT_MS: String(timeoutMs),
  // The first probe of a failing endpoint comes after the schedule's first delay.
  CALLGATE_WEBHOOK_RETRY_SCHEDULE: '500ms,30s,30s',
  CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY: '4',
};

await forEachDialect('Fair webhook delivery', (dialect) => {
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const started = await startWebhookReceiver();
    receivers.push(started);
    return started;
  };

  // Each test has an app of its own: attempts to a dead receiver outlive a test by the timeout.
  beforeEach(async () => {
    t = await startTestApp(dialect, { env, startWorker: true, overrides: { dispatcherSweepIntervalMs: 50, monitorSweepIntervalMs: 20 } });
  });
  afterEach(async () => {
    await t.close();
    await Promise.all(receivers.splice(0).map((started) => started.close()));
  });

  /** An account whose endpoint at `target` has `count` due deliveries (test events, written at once). */
  async function backlogAt(target: WebhookReceiver, count: number, account?: SeededAccount) {
    account ??= await t.newAccount();
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: account.accountId, url: target.url });
    const inputs = Array.from({ length: count }, () => ({
      accountId: account.accountId,
      mode: null,
      type: 'webhook.test' as const,
      callId: null,
      data: { endpoint_id: endpoint.id },
      endpointId: endpoint.id,
    }));
    await enqueueEvents(t.services.db, t.services.clock, inputs);
    t.services.notifier.notify();
    return endpoint;
  }

  const deliveriesOf = (endpointId: string) =>
    t.services.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'status', 'attempt_count'])
      .where('endpoint_id', '=', endpointId)
      .execute();

  it("an endpoint that never answers and one that answers late, with hundreds due each, hold back no other account's events", async () => {
    const dead = await receiver();
    dead.fallback = { status: 200, delayMs: 60_000 };
    const slow = await receiver();
    slow.fallback = { status: 200, delayMs: 1_000 };
    const deadEndpoint = await backlogAt(dead, 300);
    await backlogAt(slow, 300);
    await until('attempts to both', () => (dead.received.length >= 4 && slow.received.length >= 4 ? true : undefined));

    const fast = await receiver();
    const healthy = await t.newAccount();
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: healthy.accountId, url: fast.url });
    const calls = 15;
    for (let i = 0; i < calls; i++) {
      const answer = await t.createCall(callBody(t, { agent_id: healthy.agentId }), { token: healthy.token });
      assert.equal(answer.statusCode, 201, answer.body);
    }
    const hooks = await fast.waitFor(calls, 20_000);
    for (const hook of hooks) {
      const event = verifyWebhook(hook, endpoint.secret);
      const waitedMs = hook.receivedAt - Date.parse(event.created_at);
      assert.ok(waitedMs < 2_000, `an event of the healthy account waited ${waitedMs} ms from its call's end`);
    }
    // Meanwhile the slow endpoint went on at its cap, and the dead one never had more than its cap in flight.
    await until('a second round of attempts to the slow endpoint', () => (slow.received.length >= 8 ? true : undefined));
    assert.ok(mostOpenAtOnce(slow.received, givenUpAfterMs) <= 4, 'at most 4 attempts in flight to the slow endpoint');
    assert.ok(mostOpenAtOnce(dead.received, givenUpAfterMs) <= 4, 'at most 4 attempts in flight to the dead endpoint');
    // No delivery of the dead endpoint was failed without a request: its attempts are those it received.
    const deadAttempts = (await deliveriesOf(deadEndpoint.id)).reduce((sum, row) => sum + row.attempt_count, 0);
    assert.ok(deadAttempts <= dead.received.length, `${deadAttempts} attempts recorded, ${dead.received.length} received`);
  });

  it('an endpoint that stops answering backs off as a whole, probes one at a time, and drains at its cap once it answers', async () => {
    const target = await receiver();
    target.fallback = { status: 200, delayMs: 60_000 };
    const account = await t.newAccount();
    const endpoint = await backlogAt(target, 40, account);
    await until(
      'the endpoint to back off',
      async () =>
        (await t.services.db.selectFrom('webhook_endpoint_backoffs').selectAll().where('endpoint_id', '=', endpoint.id).executeTakeFirst())
          ?.next_try_at ?? undefined,
      15_000,
    );
    // Its other deliveries wait without an attempt: only the run that made it back off (with the attempts then
    // in flight, and a probe) spent one, and none was spent without a request.
    const rows = await deliveriesOf(endpoint.id);
    const attempted = rows.filter((row) => row.attempt_count > 0).length;
    assert.ok(attempted <= 9, `${attempted} deliveries were attempted`);
    const attempts = rows.reduce((sum, row) => sum + row.attempt_count, 0);
    assert.ok(attempts <= target.received.length, `${attempts} attempts recorded, ${target.received.length} received`);
    // Its status: in `callgate webhooks list` and on the portal's Webhooks page and its own.
    const cli = cliEnv(t.database.env);
    const listed = await runCli(cli, ['webhooks', 'list', '--account', account.accountId]);
    assert.match(
      listed.stdout,
      /yes \(failing since \d{4}-\d\d-\d\dT[\d:.]+Z, next try \d{4}-\d\d-\d\dT[\d:.]+Z( \(now: a probe is due or under way\))?\)/,
    );
    const json = await runJson(cli, ['webhooks', 'list', '--account', account.accountId]);
    assert.deepEqual(Object.keys(json.data[0].backoff).sort(), ['failing_since', 'next_try_at', 'probe_due']);
    const portal = await signedInClient(t, account);
    for (const page of ['/developers/webhooks', `/developers/webhooks/${endpoint.id}`]) {
      const shown = await portal.get(page);
      assert.equal(shown.statusCode, 200);
      assert.match(shown.body, /badge-bad">failing<\/span> <span class="muted small">failing since [^,]+, next try /, page);
    }
    // The overview does not call it "enabled" meanwhile.
    assert.match(
      (await portal.get('/developers')).body,
      new RegExp(
        `id="webhooks-state"><div><span class="badge badge-bad">failing</span> since <time [^>]+>[^<]+</time>: <a href="/developers/webhooks/${endpoint.id}" class="break">[^<]+</a> <span class="muted small">It does not answer: its events wait for it\\.`,
      ),
    );
    // A probe that fails keeps it waiting; then the receiver answers again and the rest drain.
    await until('a probe', () => (target.received.length > attempted ? true : undefined), 10_000);
    const beforeRecovery = target.received.length;
    target.fallback = { status: 200, delayMs: 20 };
    await until(
      'every delivery to succeed',
      async () => ((await deliveriesOf(endpoint.id)).every((row) => row.status === 'succeeded') ? true : undefined),
      30_000,
    );
    const drained = target.received.slice(beforeRecovery);
    assert.ok(mostOpenAtOnce(drained, givenUpAfterMs) <= 4, 'the backlog drained at most 4 at once');
    const left = await t.services.db.selectFrom('webhook_endpoint_backoffs').selectAll().where('endpoint_id', '=', endpoint.id).execute();
    assert.deepEqual(left, []);
    assert.match((await portal.get('/developers')).body, /id="webhooks-state"><span class="badge badge-ok">enabled</);
  });
});
