/**
 * The overview's Webhooks line, after real attempts to local receivers: "enabled" while the account's
 * endpoints succeed; each one that fails "failing since" its first failure, and each one its failures
 * disabled "disabled since" then, with a link to its own page; the first three and a count of the others.
 * Another account's endpoints never show.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, it } from 'node:test';
import { enqueueEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient } from '../support/portal-client.js';
import { startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

await forEachDialect('Portal overview: webhook endpoints that fail', (dialect) => {
  let t: TestApp;
  const receivers: WebhookReceiver[] = [];

  before(async () => {
    // No retry comes during a test: each endpoint gets the one attempt it is given.
    t = await startTestApp(dialect, {
      env: { CALLGATE_WEBHOOK_RETRY_SCHEDULE: '1h' },
      startWorker: true,
      overrides: { dispatcherSweepIntervalMs: 20 },
    });
  });
  after(async () => t.close());
  afterEach(async () => Promise.all(receivers.splice(0).map((receiver) => receiver.close())));

  async function receiverAnswering(status: number): Promise<WebhookReceiver> {
    const receiver = await startWebhookReceiver();
    receivers.push(receiver);
    receiver.fallback = { status, body: `answer ${status}` };
    return receiver;
  }

  /** An endpoint of `account` at `url`, after one delivery was attempted there; with its row as then. */
  async function attemptedEndpoint(account: SeededAccount, url: string) {
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: account.accountId, url });
    await enqueueEvent(t.services.db, t.services.clock, {
      accountId: account.accountId,
      mode: null,
      type: 'webhook.test',
      callId: null,
      data: { endpoint_id: endpoint.id },
      endpointId: endpoint.id,
    });
    t.services.notifier.notify();
    await until('the attempt to be recorded', async () => {
      const delivery = await t.services.db
        .selectFrom('webhook_deliveries')
        .select('attempt_count')
        .where('endpoint_id', '=', endpoint.id)
        .executeTakeFirst();
      return delivery && delivery.attempt_count > 0 ? true : undefined;
    });
    const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
    const attempt = await t.services.db
      .selectFrom('webhook_attempts')
      .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
      .select('webhook_attempts.attempted_at')
      .where('webhook_deliveries.endpoint_id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    return { ...row, attempted_at: attempt.attempted_at };
  }

  /** The overview's Webhooks line as `account` sees it. */
  async function webhooksLine(account: SeededAccount): Promise<string> {
    const page = await (await signedInClient(t, account)).get('/developers');
    assert.equal(page.statusCode, 200);
    const match = /<dd id="webhooks-state">([\s\S]*?)<\/dd>/.exec(page.body);
    assert.ok(match, 'the Webhooks line');
    return match[1]!;
  }

  it('says "failing since" for an endpoint whose receiver answers 500, with a link to its page, and never shows another account\'s', async () => {
    const account = await t.newAccount();
    const healthy = await receiverAnswering(200);
    await attemptedEndpoint(account, healthy.url);
    assert.match(await webhooksLine(account), /^<span class="badge badge-ok">enabled<\/span>$/);

    const failing = await attemptedEndpoint(account, (await receiverAnswering(500)).url);
    const other = await t.newAccount();
    const othersFailing = await attemptedEndpoint(other, (await receiverAnswering(500)).url);

    const line = await webhooksLine(account);
    assert.match(
      line,
      new RegExp(
        `^<div><span class="badge badge-bad">failing</span> since <time datetime="${failing.failing_since}">[^<]+</time>: ` +
          `<a href="/developers/webhooks/${failing.id}" class="break">${failing.url}</a></div>`,
      ),
    );
    assert.match(line, /<div class="muted small">1 other endpoint enabled<\/div>$/);
    assert.doesNotMatch(line, new RegExp(othersFailing.id));
    assert.doesNotMatch(line, /enabled<\/span>/);
    // The other account sees its own, and not this one's.
    const othersLine = await webhooksLine(other);
    assert.match(othersLine, new RegExp(`href="/developers/webhooks/${othersFailing.id}"`));
    assert.doesNotMatch(othersLine, new RegExp(failing.id));
  });

  it('says "disabled since" for an endpoint a 410 disabled; names three endpoints in trouble and counts the rest', async () => {
    const account = await t.newAccount();
    const gone = await attemptedEndpoint(account, (await receiverAnswering(410)).url);
    assert.equal(gone.enabled, 0);
    assert.match(
      await webhooksLine(account),
      new RegExp(
        `^<div><span class="badge badge-bad">disabled</span> since <time datetime="${gone.attempted_at}">[^<]+</time>: ` +
          `<a href="/developers/webhooks/${gone.id}" class="break">${gone.url}</a> <span class="muted small">Nothing is sent to it until it is enabled again\\.</span></div>$`,
      ),
    );

    const failing = await receiverAnswering(500);
    const more = [];
    for (const path of ['a', 'b', 'c']) more.push(await attemptedEndpoint(account, `${failing.url}/${path}`));
    const line = await webhooksLine(account);
    // The disabled one first, then the first two failing ones; the third is counted.
    const linked = [...line.matchAll(/href="\/developers\/webhooks\/([^"]+)"/g)].map((match) => match[1]);
    assert.deepEqual(linked, [gone.id, more[0]!.id, more[1]!.id]);
    assert.match(line, /<div class="muted small">and 1 more: <a href="\/developers\/webhooks">all endpoints<\/a><\/div>$/);
  });
});
