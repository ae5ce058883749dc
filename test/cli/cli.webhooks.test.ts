/**
 * `callgate webhooks …`, `deliveries list` and `events resend` on each database, with a local receiver
 * and the app's real worker running in this process (as a server would, beside the CLI). On PostgreSQL the
 * worker's periodic sweep is set to a minute, so a prompt delivery proves that the CLI's NOTIFY woke it.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/container.js';
import { forEachDialect } from '../support/dialects.js';
import { testEnvDefaults } from '../support/test-app.js';
import { createTestDatabase, type Dialect, type TestDatabase } from '../support/test-database.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { eventually } from '../support/wait.js';

let database: TestDatabase;
let receiver: WebhookReceiver;
let services: Services;
/** The CLI as configured on the server of these tests: private webhook targets allowed. */
let env: NodeJS.ProcessEnv;
let accountId: string;
let endpoint: Record<string, any>;
let testEventId: string;
let testDeliveryId: string;

/** The account's deliveries as `deliveries list --json` shows them, once `ready` accepts them. */
const deliveriesWhen = (args: string[], ready: (data: Record<string, any>[]) => boolean) =>
  eventually(`deliveries ${args.join(' ')}`, async () => {
    const { data } = await runJson(env, ['deliveries', 'list', '--account', accountId, ...args]);
    return ready(data) ? (data as Record<string, any>[]) : undefined;
  });

/** A database, a local receiver and the app's worker running in this process, as a server would beside the CLI. */
function withCliAndWorker(dialect: Dialect): void {
  before(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    receiver = await startWebhookReceiver();
    env = cliEnv({ ...database.env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Webhooks'])).id;
    services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }), {
      dispatcherSweepIntervalMs: dialect === 'postgres' ? 60_000 : 100,
    });
    services.startWorker();
    if (services.database.dialect === 'postgres') {
      const { pool } = services.database;
      // The worker's LISTEN connection opens in the background; a NOTIFY sent before it would be lost.
      await eventually('the worker to LISTEN', async () => {
        const { rowCount } = await pool.query(
          "select 1 from pg_stat_activity where datname = current_database() and query = 'LISTEN callgate_deliveries'",
        );
        return rowCount ? true : undefined;
      });
    }
  });
  after(async () => {
    await services.close();
    await receiver.close();
    await database.drop();
  });
}

await forEachDialect('callgate CLI webhooks', (dialect) => {
  withCliAndWorker(dialect);

  it('webhooks create refuses a private URL unless CALLGATE_WEBHOOK_ALLOW_PRIVATE is set, and returns the secret', async () => {
    const strict = cliEnv(database.env);
    const create = ['webhooks', 'create', '--account', accountId, '--url'];
    await runFailing(
      strict,
      [...create, receiver.url],
      1,
      /^callgate: the URL must use https \(for a local receiver, run this command with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true too\)\n$/,
    );
    await runFailing(
      strict,
      [...create, 'https://127.0.0.1/hooks'],
      1,
      /the URL must not point to a loopback, private, link-local or reserved address/,
    );
    await runFailing(env, [...create, receiver.url, '--events', 'call.completed,call.started'], 1, /unknown event type call\.started/);

    endpoint = await runJson(env, [...create, receiver.url, '--events', 'call.completed, call.failed', '--description', ' CRM ']);
    assert.match(endpoint.id, /^we_[0-9a-z]{26}$/);
    assert.equal(endpoint.account_id, accountId);
    assert.equal(endpoint.url, receiver.url);
    assert.match(endpoint.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(endpoint.event_types, ['call.completed', 'call.failed']);
    assert.equal(endpoint.enabled, true);
    assert.equal(endpoint.description, 'CRM');
    assert.equal(endpoint.mode, 'test', 'test unless told, as the portal');
    assert.equal(endpoint.created_by_key_id, null);

    const completedOnly = await runJson(env, [...create, `${receiver.url}?completed`, '--events', 'call.completed', '--mode', 'live']);
    assert.deepEqual(completedOnly.event_types, ['call.completed']);
    assert.equal(completedOnly.mode, 'live');
    await runFailing(env, [...create, receiver.url, '--mode', 'production'], 2, /--mode/);

    const text = await runCli(env, [...create, `${receiver.url}?human`]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Created test webhook endpoint we_[0-9a-z]{26} for account acct_/);
    assert.match(text.stdout, /mode: +test: receives the events of test-mode keys' calls and batches only \(--mode live for production\)/);
    assert.match(text.stdout, /receivers verify the webhook-signature header with it/);
    assert.equal(text.stdout.match(/whsec_\S+/g)?.length, 1, 'the secret appears once');
  });

  it('webhooks list shows the endpoints of the account, never a secret', async () => {
    const listed = await runJson(env, ['webhooks', 'list', '--account', accountId]);
    assert.deepEqual(Object.keys(listed), ['data']);
    assert.equal(listed.data.length, 3);
    const first = listed.data.find((candidate: { id: string }) => candidate.id === endpoint.id);
    const { secret: _secret, ...withoutSecret } = endpoint;
    assert.deepEqual(first, withoutSecret);
    for (const row of listed.data) assert.equal('secret' in row, false);

    const text = await runCli(env, ['webhooks', 'list', '--account', accountId]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^ID +MODE +URL +EVENTS +ENABLED +DESCRIPTION +CREATED\n/);
    assert.ok(text.stdout.includes(`${endpoint.id}  test  ${receiver.url} `));
    assert.doesNotMatch(text.stdout, /whsec_/);

    const empty = await runJson(env, ['accounts', 'create', '--name', 'No endpoints']);
    assert.deepEqual(await runJson(env, ['webhooks', 'list', '--account', empty.id]), { data: [] });
  });

  it('webhooks test queues a signed webhook.test event, which the running worker delivers', async () => {
    const queued = await runJson(env, ['webhooks', 'test', endpoint.id]);
    assert.deepEqual(Object.keys(queued).sort(), ['delivery_id', 'endpoint_id', 'event_id']);
    assert.match(queued.event_id, /^evt_/);
    assert.match(queued.delivery_id, /^dlv_/);
    assert.equal(queued.endpoint_id, endpoint.id);
    testEventId = queued.event_id;
    testDeliveryId = queued.delivery_id;

    // Within 5 s: far below the one-minute sweep of the PostgreSQL worker.
    const [hook] = await receiver.waitFor(1, 5_000);
    assert.ok(hook);
    const body = verifyWebhook(hook, endpoint.secret);
    assert.equal(body.id, testEventId);
    assert.equal(body.type, 'webhook.test');
    assert.equal(body.data.endpoint_id, endpoint.id);

    const text = await runCli(env, ['webhooks', 'test', endpoint.id]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /^Queued a webhook\.test event for http:\/\/127\.0\.0\.1:\d+\/hooks\.\n +event: +evt_\S+\n +delivery: +dlv_\S+\n/,
    );
    await receiver.waitFor(2, 5_000);
  });

  it('deliveries list shows deliveries newest first with their event, call, endpoint and last attempt', async () => {
    // A real call too, so that a delivery has a call id: a key and an agent made by the CLI, the app's API.
    const key = await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'calls', '--mode', 'test']);
    await runJson(env, ['agents', 'add', '--account', accountId, '--agent-id', 'agent_hooks', '--name', 'Hooks']);
    const app = buildApp(services);
    let callId: string;
    try {
      const placed = await app.inject({
        method: 'POST',
        url: '/v1/calls',
        headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
        payload: { agent_id: 'agent_hooks', to: '+14155550123' },
      });
      assert.equal(placed.statusCode, 201, placed.body);
      callId = placed.json().id;
    } finally {
      await app.close();
    }
    // Two test events to `endpoint`, then the test call's outcome to each of the two test endpoints (the live
    // one, ?completed, gets none).
    const data = await deliveriesWhen([], (rows) => rows.length === 4 && rows.every((row) => row.status === 'succeeded'));
    assert.deepEqual(
      data.map((row) => row.id),
      data
        .map((row) => row.id)
        .sort()
        .reverse(),
      'newest first',
    );
    const [newest] = data;
    assert.equal(newest?.event_type, 'call.completed');
    assert.equal(newest?.call_id, callId);
    assert.equal(data.filter((row) => row.endpoint_url.endsWith('?completed')).length, 0);
    const oldest = data[3];
    assert.deepEqual(
      { ...oldest, created_at: undefined, last_attempt_at: undefined },
      {
        id: testDeliveryId,
        event_id: testEventId,
        endpoint_id: endpoint.id,
        status: 'succeeded',
        trigger: 'test',
        attempt_count: 1,
        next_attempt_at: null,
        last_attempt_at: undefined,
        last_status_code: 200,
        last_error: null,
        created_at: undefined,
        event_type: 'webhook.test',
        call_id: null,
        endpoint_url: endpoint.url,
        endpoint_description: endpoint.description,
        endpoint_deleted_at: null,
      },
    );

    const [limited, ofEndpoint, pending] = await Promise.all([
      runJson(env, ['deliveries', 'list', '--account', accountId, '--limit', '1']),
      runJson(env, ['deliveries', 'list', '--account', accountId, '--endpoint', endpoint.id, '--status', 'succeeded']),
      runJson(env, ['deliveries', 'list', '--account', accountId, '--status', 'pending']),
    ]);
    assert.deepEqual(
      limited.data.map((row: { id: string }) => row.id),
      [newest?.id],
    );
    assert.equal(ofEndpoint.data.length, 3);
    assert.deepEqual(pending.data, []);

    const text = await runCli(env, ['deliveries', 'list', '--account', accountId]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^ID +EVENT +CALL +ENDPOINT URL +STATUS +ATTEMPTS +LAST RESULT +NEXT ATTEMPT\n/);
    assert.match(text.stdout, new RegExp(`${testDeliveryId} +webhook\\.test +- +http://127\\.0\\.0\\.1:\\d+/hooks +succeeded +1 +200 +-`));
    assert.match(text.stdout, new RegExp(`call\\.completed +${callId}`));
  });

  it('events resend sends the same event again as new deliveries', async () => {
    const before = receiver.received.length;
    const once = await runJson(env, ['events', 'resend', testEventId, '--endpoint', endpoint.id]);
    assert.equal(once.event_id, testEventId);
    assert.equal(once.delivery_ids.length, 1);
    assert.notEqual(once.delivery_ids[0], testDeliveryId);
    const received = await receiver.waitFor(before + 1, 5_000);
    const original = receiver.received.find((hook) => hook.headers['webhook-id'] === testEventId);
    const again = received[before];
    assert.ok(original && again);
    assert.equal(again.headers['webhook-id'], testEventId, 'the same event id');
    assert.equal(again.body, original.body, 'the same body');

    const [resent] = await deliveriesWhen(['--limit', '1'], (rows) => rows[0]?.status === 'succeeded');
    assert.equal(resent?.id, once.delivery_ids[0]);
    assert.equal(resent?.trigger, 'manual');
    assert.equal(resent?.event_id, testEventId);

    // Without --endpoint a test event goes again to the endpoint it tested, not to every endpoint.
    const text = await runCli(env, ['events', 'resend', testEventId]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^Queued ${testEventId} again as a new delivery:\\n  dlv_\\S+\\n`));
    await receiver.waitFor(before + 2, 5_000);

    const other = await runJson(env, ['accounts', 'create', '--name', 'Other']);
    const elsewhere = await runJson(env, ['webhooks', 'create', '--account', other.id, '--url', receiver.url]);
    await runFailing(
      env,
      ['events', 'resend', testEventId, '--endpoint', elsewhere.id],
      1,
      /no enabled endpoint we_\S+ in the event's account/,
    );
  });

  it('webhooks rotate-secret prints a new secret; the old one keeps signing for 24 hours', async () => {
    const startedAt = Date.now();
    const rotated = await runJson(env, ['webhooks', 'rotate-secret', endpoint.id]);
    assert.equal(rotated.id, endpoint.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, endpoint.secret);
    const overlapEndsMs = Date.parse(rotated.previous_secret_expires_at) - startedAt;
    assert.ok(overlapEndsMs >= 24 * 3_600_000 - 1_000 && overlapEndsMs <= 24 * 3_600_000 + 5_000, `overlap ${overlapEndsMs} ms`);

    // A delivery now carries a signature per secret: receivers with either one verify it.
    const before = receiver.received.length;
    await runJson(env, ['webhooks', 'test', endpoint.id]);
    const hook = (await receiver.waitFor(before + 1, 5_000))[before];
    assert.ok(hook);
    assert.equal(String(hook.headers['webhook-signature']).split(' ').length, 2);
    assert.equal(verifyWebhook(hook, rotated.secret).type, 'webhook.test');
    assert.equal(verifyWebhook(hook, endpoint.secret).type, 'webhook.test');

    const text = await runCli(env, ['webhooks', 'rotate-secret', endpoint.id]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^Rotated the signing secret of webhook endpoint we_/);
    assert.match(text.stdout, /The old secret keeps signing, beside the new one, for 24 hours/);
    assert.equal(text.stdout.match(/whsec_\S+/g)?.length, 1, 'only the new secret is shown');
  });

  it('webhooks delete removes an endpoint; its pending deliveries end as failed', async () => {
    // With the worker stopped, a test event stays pending until the delete fails it.
    await services.jobs.stop();
    const queued = await runJson(env, ['webhooks', 'test', endpoint.id]);
    const deleted = await runJson(env, ['webhooks', 'delete', endpoint.id]);
    assert.equal(deleted.id, endpoint.id);
    assert.equal(deleted.deleted, true);
    assert.equal(deleted.enabled, false);
    assert.equal('secret' in deleted, false);

    const { data } = await runJson(env, ['deliveries', 'list', '--account', accountId, '--endpoint', endpoint.id, '--limit', '1']);
    assert.equal(data[0].id, queued.delivery_id);
    assert.equal(data[0].status, 'failed');
    assert.equal(data[0].last_error, 'The endpoint was deleted.');
    assert.match(data[0].endpoint_deleted_at, /^\d{4}-\d\d-\d\dT/, 'the row says its endpoint is gone');
    const table = await runCli(env, ['deliveries', 'list', '--account', accountId, '--endpoint', endpoint.id, '--limit', '1']);
    assert.match(
      table.stdout,
      new RegExp(`${queued.delivery_id} +webhook\\.test .* failed +0 +The endpoint was deleted\\.`),
      'the table says why',
    );

    const listed = await runJson(env, ['webhooks', 'list', '--account', accountId]);
    assert.equal(
      listed.data.some((row: { id: string }) => row.id === endpoint.id),
      false,
    );
    await runFailing(env, ['webhooks', 'delete', endpoint.id], 1, /no webhook endpoint with id "we_/);
    await runFailing(env, ['webhooks', 'test', endpoint.id], 1, /no webhook endpoint with id "we_/);
    await runFailing(env, ['events', 'resend', testEventId, '--endpoint', endpoint.id], 1, /no enabled endpoint/);

    const text = await runCli(env, ['webhooks', 'delete', (await runJson(env, ['webhooks', 'list', '--account', accountId])).data[0].id]);
    assert.equal(text.code, 0);
    assert.match(
      text.stdout,
      /^Deleted webhook endpoint we_\S+ \(http:\/\/127\.0\.0\.1:\d+\/hooks\?\w+\)\. Its pending deliveries ended as failed\.\n$/,
    );
  });
});

await forEachDialect('callgate CLI webhooks: an endpoint disabled by a 410', (dialect) => {
  withCliAndWorker(dialect);

  it('an endpoint that answered 410 is disabled and says so; webhooks enable brings it back', async () => {
    const gone = await startWebhookReceiver();
    try {
      const created = await runJson(env, ['webhooks', 'create', '--account', accountId, '--url', gone.url]);
      gone.queue({ status: 410, body: 'gone' });
      await runJson(env, ['webhooks', 'test', created.id]);
      await gone.waitFor(1, 5_000);
      const disabled = await eventually('the 410 to disable the endpoint', async () => {
        const { data } = await runJson(env, ['webhooks', 'list', '--account', accountId]);
        const row = data.find((candidate: { id: string }) => candidate.id === created.id);
        return row?.enabled === false ? row : undefined;
      });
      assert.equal(disabled.disabled_reason, 'The endpoint answered 410 Gone, so it was disabled.');
      const listed = await runCli(env, ['webhooks', 'list', '--account', accountId]);
      assert.match(listed.stdout, new RegExp(`${created.id} .* no \\(The endpoint answered 410 Gone, so it was disabled\\.\\)`));
      await runFailing(
        env,
        ['webhooks', 'test', created.id],
        1,
        new RegExp(
          `^callgate: webhook endpoint ${created.id} is disabled \\(The endpoint answered 410 Gone, so it was disabled\\.\\); enable it first with "npx callgate webhooks enable ${created.id}"\n$`,
        ),
      );

      const text = await runCli(env, ['webhooks', 'enable', created.id]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(
        text.stdout,
        /^Enabled webhook endpoint we_\S+ \(http:\/\/127\.0\.0\.1:\d+\/hooks\)\.\nIt had been disabled: The endpoint answered 410 Gone/,
      );
      const enabled = await runJson(env, ['webhooks', 'enable', created.id]);
      assert.equal(enabled.enabled, true);
      assert.equal(enabled.disabled_reason, null);
      assert.equal('secret' in enabled, false);

      // Enabled again, it gets events: the next test event is delivered.
      await runJson(env, ['webhooks', 'test', created.id]);
      const [, hook] = await gone.waitFor(2, 5_000);
      assert.equal(verifyWebhook(hook!, created.secret).type, 'webhook.test');
      await runFailing(env, ['webhooks', 'enable', 'we_missing'], 1, /^callgate: no webhook endpoint with id "we_missing"\n$/);
    } finally {
      await gone.close();
    }
  });
});
