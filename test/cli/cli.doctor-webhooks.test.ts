/**
 * `callgate doctor` on webhook endpoints whose receivers fail, after real attempts to local receivers: a
 * failing endpoint, and one its failures disabled, are warnings that say since when, the last error, the
 * next try and what to do, and leave the exit status 0; a healthy endpoint is OK. The app's clock is set in
 * the past, so that doctor, on the real clock, reads the endpoints' times as past ones.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, it } from 'node:test';
import { enqueueEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { cliEnv, runCli } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

const second = 1_000;
const hour = 3_600 * second;
const day = 24 * hour;
const iso = (ms: number) => new Date(ms).toISOString();
/** A text as a regular expression that matches it literally. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

await forEachDialect('callgate doctor on failing webhook endpoints', (dialect) => {
  const clock = new ManualClock();
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];

  before(async () => {
    // The first retry comes 5 days after the first attempt (no jitter): when that one fails, the endpoint has
    // failed for 5 days and is disabled.
    t = await startTestApp(dialect, {
      env: { CALLGATE_WEBHOOK_RETRY_SCHEDULE: '5d,5d' },
      startWorker: true,
      overrides: { clock, random: () => 0.5, dispatcherSweepIntervalMs: 20 },
    });
  });
  after(async () => t.close());
  beforeEach(() => clock.set(Date.now() - hour));
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
    // Each test judges its own endpoints only.
    await t.services.db
      .updateTable('webhook_endpoints')
      .set({ deleted_at: iso(Date.now()) })
      .execute();
  });

  /** An endpoint of the seeded account whose receiver answers `status`, and one delivery attempted there. */
  async function endpointAnswering(status: number, body: string) {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    receiver.fallback = { status, body };
    const endpoint = await createEndpoint(t.services.db, clock, true, { accountId: t.seed.accountId, url: receiver.url });
    await enqueueEvent(t.services.db, clock, {
      accountId: t.seed.accountId,
      mode: null,
      type: 'webhook.test',
      callId: null,
      data: { endpoint_id: endpoint.id },
      endpointId: endpoint.id,
    });
    t.services.notifier.notify();
    await attempted(receiver, 1);
    return { endpoint, receiver };
  }

  /** Waits for the receiver's `count`th request and for the attempt to be written. */
  async function attempted(receiver: WebhookReceiver, count: number) {
    await receiver.waitFor(count, 10_000);
    await until('the attempt to be recorded', async () => {
      const rows = await t.services.db
        .selectFrom('webhook_attempts')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
        .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
        .select('webhook_attempts.id')
        .where('webhook_endpoints.url', '=', receiver.url)
        .execute();
      return rows.length >= count ? true : undefined;
    });
    await t.services.dispatcher.idle();
  }

  const doctor = () => runCli(cliEnv({ ...t.database.env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }), ['doctor']);
  const doctorJson = async () =>
    JSON.parse((await runCli(cliEnv({ ...t.database.env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }), ['doctor', '--json'])).stdout);

  it('a healthy endpoint is OK; one whose receiver answers 500 is WARN with since when, its last error and next try, and exit 0', async () => {
    const { endpoint: healthy } = await endpointAnswering(200, 'ok');
    const start = clock.now().getTime();
    const { endpoint: failing } = await endpointAnswering(500, 'receiver  down\nfor maintenance');

    const run = await doctor();
    assert.equal(run.code, 0, run.stdout);
    assert.match(run.stdout, new RegExp(`^OK {4}webhook endpoint ${healthy.id}: ${literally(healthy.url)} resolves`, 'm'));
    assert.match(
      run.stdout,
      new RegExp(
        `^WARN {2}webhook endpoint ${failing.id}: ${literally(failing.url)} is failing since ${literally(iso(start))} \\(1 hour ago\\)\\. ` +
          `Last error: HTTP 500 "receiver down for maintenance", at ${literally(iso(start))} \\(1 hour ago\\)\\. ` +
          `Next try: ${literally(iso(start + 5 * day))} \\(in 4 days\\), the retry of its first waiting delivery\n` +
          ` {6}what to do: fix the receiver .*/developers/webhooks/${failing.id} of account ${t.seed.accountId}.*` +
          `npx callgate webhooks test ${failing.id} .*after ${literally(iso(start + 5 * day))} disables it$`,
        'm',
      ),
    );
    assert.match(run.stdout, /^All checks passed \(1 warning\)\.$/m);

    const report = await doctorJson();
    assert.equal(report.ok, true);
    const statuses = Object.fromEntries(report.checks.map((check: { name: string; status: string }) => [check.name, check.status]));
    assert.equal(statuses[`webhook endpoint ${healthy.id}`], 'ok');
    assert.equal(statuses[`webhook endpoint ${failing.id}`], 'warn');
  });

  it('an endpoint its failures disabled (5 days of 500s, or a 410) is WARN saying it is disabled and gets nothing until enabled', async () => {
    // Half an hour back: "minutes ago" however long the machine takes (an hour back read "1 hour ago" once under load).
    const start = Date.now() - 5 * day - hour / 2;
    clock.set(start);
    const { endpoint: tired, receiver } = await endpointAnswering(500, 'still down');
    // The retry, 5 days later, fails too: the endpoint is disabled.
    clock.advance(5 * day + second);
    await attempted(receiver, 2);
    const disabledAt = start + 5 * day + second;
    const { endpoint: gone } = await endpointAnswering(410, 'gone');
    const goneAt = clock.now().getTime();
    const rows = await t.services.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'enabled'])
      .where('id', 'in', [tired.id, gone.id])
      .execute();
    assert.deepEqual(
      rows.map((row) => row.enabled),
      [0, 0],
    );

    const run = await doctor();
    assert.equal(run.code, 0, run.stdout);
    assert.match(
      run.stdout,
      new RegExp(
        `^WARN {2}webhook endpoint ${tired.id}: ${literally(tired.url)} was disabled at ${literally(iso(disabledAt))} \\(\\d+ minutes ago\\) by its failures: ` +
          `Every delivery failed for 5 days \\(since ${literally(iso(start))}\\), so the endpoint was disabled\\. ` +
          `Last error: HTTP 500 "still down", at ${literally(iso(disabledAt))} \\(\\d+ minutes ago\\)\\. ` +
          'Next try: none, nothing is sent to it \\(new events are not queued for it\\) until it is enabled again\n' +
          ` {6}what to do: fix the receiver, then enable the endpoint: npx callgate webhooks enable ${tired.id} .*npx callgate webhooks test ${tired.id}`,
        'm',
      ),
    );
    assert.match(
      run.stdout,
      new RegExp(
        `^WARN {2}webhook endpoint ${gone.id}: ${literally(gone.url)} was disabled at ${literally(iso(goneAt))} \\(\\d+ minutes ago\\) by its failures: ` +
          'The endpoint answered 410 Gone, so it was disabled\\. Last error: HTTP 410 "gone", ',
        'm',
      ),
    );
    assert.match(run.stdout, /^All checks passed \(2 warnings\)\.$/m);
  });
});
