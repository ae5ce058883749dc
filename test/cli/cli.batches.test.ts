/**
 * `callgate batches list|show|cancel` on each database, beside the real app on the same database: batches
 * are made through POST /v1/batches with a live and a test key of one account, the CLI sees both modes
 * (and says which), and what it shows is what the API shows. The worker runs only for the last test, which
 * needs a batch that really completed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { apiGet, batchFields, createBatch, numbers, readBatch } from '../support/batch-client.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';

/** The API's batch fields, and the CLI's two more: the owner's account and the mode. */
const batchKeys = [...batchFields, 'account_id', 'mode'].sort();

/** The API's batch inside the CLI's: the CLI adds the owner's account and the mode, nothing else. */
function apiPart(batch: Record<string, any>): Record<string, any> {
  const { account_id: _account, mode: _mode, recipients: _recipients, ...rest } = batch;
  return rest;
}

describe('callgate batches usage (no database needed)', () => {
  const env = cliEnv({ CALLGATE_DATA_DIR: '/nonexistent/callgate-batches-usage' });

  it('--help lists the batches commands; a wrong line exits 2 before any database is opened', async () => {
    const root = await runCli(env, ['--help']);
    assert.equal(root.code, 0);
    for (const command of ['batches list', 'batches show', 'batches cancel']) assert.ok(root.stdout.includes(command), command);
    const list = await runCli(env, ['batches', 'list', '--help']);
    assert.match(
      list.stdout,
      /Usage: callgate batches list --account ACCOUNT_ID \[--status scheduled\|running\|paused\|completed\|cancelled\]/,
    );
    const cases: [string[], RegExp][] = [
      [['batches', 'list'], /^callgate: missing option --account ACCOUNT_ID\n\nRun "callgate batches list --help" for usage\.\n$/],
      [
        ['batches', 'list', '--account', 'acct_x', '--status', 'done'],
        /option --status must be one of scheduled, running, paused, completed, cancelled, got "done"/,
      ],
      [['batches', 'list', '--account', 'acct_x', '--limit', '101'], /--limit must be a whole number from 1 to 100/],
      [['batches', 'show'], /missing argument BATCH_ID/],
      [['batches', 'show', 'batch_a', '--limit', '0'], /--limit must be a whole number from 1 to 100/],
      [['batches', 'cancel'], /missing argument BATCH_ID/],
      [['batches', 'cancel', 'batch_a', 'batch_b'], /unexpected argument "batch_b"/],
      [['batches', 'pause', 'batch_a'], /unknown command "batches pause"/],
    ];
    // The data directory does not exist: any attempt to open the database would fail with exit 1.
    await Promise.all(cases.map(([args, message]) => runFailing(env, args, 2, message)));
  });
});

await forEachDialect('callgate batches CLI', (dialect) => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  let accountId: string;
  let testToken: string;
  /** Made in this order: a live batch of 3, a test batch of 25, a test batch scheduled an hour ahead. */
  let live: Record<string, any>;
  let test: Record<string, any>;
  let scheduled: Record<string, any>;
  const testNumbers = numbers(25, 2000);

  before(async () => {
    t = await startTestApp(dialect);
    env = cliEnv(t.database.env);
    accountId = t.seed.accountId;
    testToken = (await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'batches', '--mode', 'test'])).token;
    live = await createBatch(t, numbers(3), { name: 'Live reminders' });
    test = await createBatch(t, testNumbers, { name: 'Test run', max_concurrency: 7 }, { token: testToken });
    const inAnHour = new Date(t.services.clock.now().getTime() + 3600_000).toISOString();
    scheduled = await createBatch(t, numbers(2, 3000), { scheduled_at: inAnHour }, { token: testToken });
    // Another account's batch, which no listing of this account shows.
    const other = await t.newAccount({ agentId: 'agent_other' });
    await createBatch(t, numbers(1, 4000), { agent_id: 'agent_other' }, { token: other.token });
  });
  after(async () => t?.close());

  it('batches list shows test and live batches of the account, newest first, each with its mode and counts', async () => {
    const listed = await runJson(env, ['batches', 'list', '--account', accountId]);
    assert.deepEqual(Object.keys(listed), ['data', 'has_more']);
    assert.equal(listed.has_more, false);
    assert.deepEqual(
      listed.data.map((batch: Record<string, any>) => [batch.id, batch.mode, batch.status]),
      [
        [scheduled.id, 'test', 'scheduled'],
        [test.id, 'test', 'running'],
        [live.id, 'live', 'running'],
      ],
    );
    for (const batch of listed.data) {
      assert.deepEqual(Object.keys(batch).sort(), batchKeys);
      assert.equal(batch.account_id, accountId);
    }
    // Each one is the API's batch (as its own mode's key reads it), plus account_id and mode.
    assert.deepEqual(apiPart(listed.data[1]), await readBatch(t, test.id, testToken));
    assert.deepEqual(apiPart(listed.data[2]), await readBatch(t, live.id));
    assert.deepEqual(listed.data[1].counts, { total: 25, queued: 25, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 0 });

    const text = await runCli(env, ['batches', 'list', '--account', accountId]);
    assert.equal(text.code, 0, text.stderr);
    assert.equal(text.stderr, '');
    const lines = text.stdout.trimEnd().split('\n');
    assert.match(
      lines[0]!,
      /^ID +MODE +STATUS +NAME +TOTAL +QUEUED +DIALING +IN PROGRESS +COMPLETED +FAILED +CANCELLED +SCHEDULED AT +CREATED$/,
    );
    assert.equal(lines.length, 4);
    assert.match(lines[1]!, new RegExp(`^${scheduled.id} +test +scheduled +- +2 +2 +0 +0 +0 +0 +0 +${scheduled.scheduled_at} `));
    assert.match(lines[2]!, new RegExp(`^${test.id} +test +running +Test run +25 +25 +0 +0 +0 +0 +0 `));
    assert.match(lines[3]!, new RegExp(`^${live.id} +live +running +Live reminders +3 +3 `));
  });

  it('batches list --status keeps one state; --limit says that there are more', async () => {
    const ids = async (...args: string[]) =>
      (await runJson(env, ['batches', 'list', '--account', accountId, ...args])).data.map((batch: { id: string }) => batch.id);
    assert.deepEqual(await ids('--status', 'running'), [test.id, live.id]);
    assert.deepEqual(await ids('--status', 'scheduled'), [scheduled.id]);
    assert.deepEqual(await ids('--status', 'completed'), []);
    const none = await runCli(env, ['batches', 'list', '--account', accountId, '--status', 'paused']);
    assert.equal(none.code, 0);
    assert.equal(none.stdout, `Account ${accountId} has no paused batches.\n`);

    const first = await runJson(env, ['batches', 'list', '--account', accountId, '--limit', '1']);
    assert.deepEqual(
      first.data.map((batch: { id: string }) => batch.id),
      [scheduled.id],
    );
    assert.equal(first.has_more, true);
    const one = await runCli(env, ['batches', 'list', '--account', accountId, '--limit', '1']);
    assert.match(one.stdout, /\n\nOnly the newest is shown; there are more/);
    const text = await runCli(env, ['batches', 'list', '--account', accountId, '--limit', '2']);
    assert.match(text.stdout, /The 2 newest are shown; there are more \(--limit up to 100, or the portal's Batches page\)\.\n$/);
  });

  it('batches show gives the batch, its counts and the first recipients, saying how many of how many', async () => {
    const shown = await runJson(env, ['batches', 'show', test.id]);
    assert.deepEqual(Object.keys(shown).sort(), [...batchKeys, 'recipients'].sort());
    assert.equal(shown.mode, 'test');
    assert.deepEqual(apiPart(shown), await readBatch(t, test.id, testToken));
    assert.equal(shown.recipients.has_more, true);
    assert.equal(shown.recipients.data.length, 20);
    // The recipients as GET /v1/batches/{id}/recipients shows them, in the order sent.
    const fromApi = await apiGet(t, `/v1/batches/${test.id}/recipients?limit=20`, testToken);
    assert.deepEqual(shown.recipients, fromApi.json());
    assert.deepEqual(
      shown.recipients.data.map((recipient: { to: string }) => recipient.to),
      testNumbers.slice(0, 20),
    );

    const text = await runCli(env, ['batches', 'show', test.id]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^Batch ${test.id} \\(test mode\\) of account ${accountId}\n`));
    assert.match(text.stdout, /name: +Test run\n/);
    assert.match(text.stdout, /max concurrency: +7\n/);
    assert.match(text.stdout, /recipients: +25 in all: 25 queued, 0 dialing, 0 in progress, 0 completed, 0 failed, 0 cancelled\n/);
    assert.match(
      text.stdout,
      /\nThe first 20 of 25 recipients, in the order sent:\n# +ID +TO +REFERENCE +STATUS +ATTEMPTS +NEXT ATTEMPT +CALL +LAST FAILURE +UPDATED\n/,
    );
    assert.match(text.stdout, /calling window: +none: recipients are dialed at any hour\n/);
    assert.match(text.stdout, /retries: +none: one dial per recipient\n/);
    const first = shown.recipients.data[0];
    assert.match(text.stdout, new RegExp(`\n1 +rcp_[0-9a-z]{26} +\\${testNumbers[0]} +ref-0 +queued +0 +${first.next_attempt_at} +- +- +`));
    assert.match(text.stdout, new RegExp(`\n20 +rcp_[0-9a-z]{26} +\\${testNumbers[19]} +ref-19 +queued `));
    assert.doesNotMatch(text.stdout, new RegExp(`\\${testNumbers[20]}`));
    assert.match(
      text.stdout,
      new RegExp(`The others: --limit up to 100, GET /v1/batches/${test.id}/recipients, or the portal's batch page\\.\n$`),
    );

    const all = await runJson(env, ['batches', 'show', test.id, '--limit', '25']);
    assert.equal(all.recipients.data.length, 25);
    assert.equal(all.recipients.has_more, false);
    assert.match((await runCli(env, ['batches', 'show', test.id, '--limit', '25'])).stdout, /\nAll 25 recipients, in the order sent:\n/);

    const liveText = await runCli(env, ['batches', 'show', live.id]);
    assert.match(liveText.stdout, new RegExp(`^Batch ${live.id} \\(live mode\\) of account ${accountId}\n`));
    assert.match(liveText.stdout, /\nAll 3 recipients, in the order sent:\n/);
    assert.doesNotMatch(liveText.stdout, /The others/);
  });

  it('batches show says the calling window and the retries in words, and when a held recipient is dialed', async () => {
    const held = await createBatch(
      t,
      numbers(2, 6000),
      {
        calling_window: {
          start: '09:00',
          end: '17:30',
          days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sun'],
          time_zone: 'recipient',
          fallback_time_zone: 'America/New_York',
        },
        retry: { on: ['busy'], max_attempts: 3, delay_minutes: 90 },
      },
      { token: testToken },
    );
    const shown = await runJson(env, ['batches', 'show', held.id]);
    assert.deepEqual(apiPart(shown), await readBatch(t, held.id, testToken));
    const text = await runCli(env, ['batches', 'show', held.id]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      /calling window: +09:00–17:30, mon–fri, sun, in each recipient's time zones, from its number \(America\/New_York for a number of no known zone\)\n/,
    );
    assert.match(text.stdout, /retries: +a busy recipient is dialed again 90 minutes later, up to 3 dials in all\n/);
    shown.recipients.data.forEach((recipient: Record<string, any>, index: number) => {
      assert.ok(recipient.next_attempt_at, 'a queued recipient says when it is dialed');
      assert.match(
        text.stdout,
        new RegExp(`\n${index + 1} +${recipient.id} +\\${recipient.to} +ref-${index} +queued +0 +${recipient.next_attempt_at} +- +- +`),
      );
    });
    const hourly = await createBatch(t, numbers(1, 6100), { retry: { max_attempts: 2, delay_minutes: 120 } }, { token: testToken });
    assert.match(
      (await runCli(env, ['batches', 'show', hourly.id])).stdout,
      /retries: +a busy or unanswered recipient is dialed again 2 hours later, up to 2 dials in all\n/,
    );
  });

  it('batches cancel ends what was not dialed, as POST /v1/batches/{id}/cancel does; twice changes nothing', async () => {
    const cancelled = await runJson(env, ['batches', 'cancel', scheduled.id]);
    assert.deepEqual(Object.keys(cancelled).sort(), batchKeys);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.mode, 'test');
    assert.deepEqual(cancelled.counts, { total: 2, queued: 0, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 2 });
    assert.ok(cancelled.completed_at, 'nothing was under way, so the batch ended then');
    // The API (and its own cancel, idempotent) answer the very same batch.
    assert.deepEqual(apiPart(cancelled), await readBatch(t, scheduled.id, testToken));
    const viaApi = await t.inject({
      method: 'POST',
      url: `/v1/batches/${scheduled.id}/cancel`,
      headers: { authorization: `Bearer ${testToken}` },
    });
    assert.equal(viaApi.statusCode, 200);
    assert.deepEqual(viaApi.json(), apiPart(cancelled));

    const again = await runJson(env, ['batches', 'cancel', scheduled.id]);
    assert.deepEqual(again, cancelled);
    const againText = await runCli(env, ['batches', 'cancel', scheduled.id]);
    assert.equal(againText.code, 0);
    assert.match(againText.stdout, new RegExp(`^Batch ${scheduled.id} \\(test mode\\) was cancelled already; nothing changed\\.\n`));
    assert.match(againText.stdout, /status: +cancelled\n/);

    const liveText = await runCli(env, ['batches', 'cancel', live.id]);
    assert.equal(liveText.code, 0, liveText.stderr);
    assert.match(
      liveText.stdout,
      new RegExp(`^Cancelled batch ${live.id} \\(live mode\\): 3 recipients not yet dialed ended cancelled\\.\n`),
    );
    assert.match(liveText.stdout, /recipients: +3 in all: 0 queued, 0 dialing, 0 in progress, 0 completed, 0 failed, 3 cancelled\n/);
    assert.match(
      liveText.stdout,
      /\nNo call is under way: the batch has ended, and its batch.completed event is queued for the endpoints that want it\.\n$/,
    );
    assert.equal((await readBatch(t, live.id)).status, 'cancelled');
    assert.deepEqual(
      (await runJson(env, ['batches', 'list', '--account', accountId, '--status', 'cancelled'])).data.map(
        (batch: { id: string }) => batch.id,
      ),
      [scheduled.id, live.id],
    );
  });

  it('an unknown batch or account fails with exit 1 and the not-found message of the other commands', async () => {
    const cases: [string[], RegExp][] = [
      [['batches', 'show', 'batch_unknown'], /^callgate: no batch with id "batch_unknown"\n$/],
      [['batches', 'show', 'batch_unknown', '--json'], /^callgate: no batch with id "batch_unknown"\n$/],
      [['batches', 'cancel', 'batch_unknown'], /^callgate: no batch with id "batch_unknown"\n$/],
      [['batches', 'list', '--account', 'acct_missing'], /^callgate: no account with id "acct_missing" in this database; /],
    ];
    await Promise.all(cases.map(([args, message]) => runFailing(env, args, 1, message)));
  });

  it('batches cancel refuses a batch that completed (batch_finished), leaving it as it was', async () => {
    t.services.startWorker();
    const done = await createBatch(t, numbers(1, 5000), { name: 'One call' }, { token: testToken });
    const completed = await until('the batch to complete', async () => {
      const now = await readBatch(t, done.id, testToken);
      return now.status === 'completed' ? now : undefined;
    });
    assert.equal(completed.counts.completed, 1);

    const message = new RegExp(`^callgate: batch ${done.id} has completed: every recipient has ended, nothing is left to cancel\n$`);
    await runFailing(env, ['batches', 'cancel', done.id], 1, message);
    await runFailing(env, ['batches', 'cancel', done.id, '--json'], 1, message);
    assert.deepEqual(await readBatch(t, done.id, testToken), completed);

    // Its recipient shows the call it became.
    const shown = await runJson(env, ['batches', 'show', done.id]);
    const [recipient] = shown.recipients.data;
    assert.equal(recipient.status, 'completed');
    assert.match(recipient.call_id, /^call_/);
    const text = await runCli(env, ['batches', 'show', done.id]);
    assert.match(text.stdout, /\nIts recipient, in the order sent:\n/);
    assert.match(text.stdout, new RegExp(`\n1 +rcp_[0-9a-z]{26} +\\+14155555000 +ref-0 +completed +1 +- +${recipient.call_id} +- +`));
  });

  it('batches show says why a queued recipient waits (its last failure) and when it is dialed again, fields in the API order', async () => {
    const retried = await createBatch(
      t,
      [simulatorMagicNumbers.busy],
      { retry: { on: ['busy'], max_attempts: 2, delay_minutes: 1440 } },
      { token: testToken },
    );
    const waiting = await until('the busy recipient to wait for its retry', async () => {
      const [recipient] = (await apiGet(t, `/v1/batches/${retried.id}/recipients`, testToken)).json().data;
      return recipient.status === 'queued' && recipient.attempts === 1 ? recipient : undefined;
    });
    const raw = await apiGet(t, `/v1/batches/${retried.id}/recipients`, testToken);
    const apiKeys = Object.keys(JSON.parse(raw.body).data[0]);
    const schema = (await apiGet(t, '/v1/openapi.json', testToken)).json().components.schemas.Recipient;
    assert.deepEqual(
      apiKeys,
      Object.keys(schema.properties).filter((key) => key in waiting),
      'the API answers in the order of the schema',
    );
    const shown = await runJson(env, ['batches', 'show', retried.id]);
    assert.deepEqual(Object.keys(shown.recipients.data[0]), apiKeys, 'the CLI shows the fields in the same order');
    assert.equal(waiting.last_failure_reason, 'busy');
    assert.ok(waiting.last_failure_message);
    const text = (await runCli(env, ['batches', 'show', retried.id])).stdout;
    const escaped = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(
      text,
      new RegExp(
        `\n1 +${waiting.id} +\\+15005550001 +ref-0 +queued +1 +${waiting.next_attempt_at} +${waiting.call_id} +busy: ${escaped(waiting.last_failure_message)} +`,
      ),
    );
    await runJson(env, ['batches', 'cancel', retried.id]);
  });
});
