/**
 * `callgate suppressions add|list|remove` on each database, on the database of a running app: what the CLI
 * puts on an account's list the API shows and POST /v1/calls refuses, and what it takes off may be called.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { getSuppressions } from '../support/suppression-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('callgate CLI suppressions', (dialect) => {
  let t: TestApp;
  let env: NodeJS.ProcessEnv;
  let account: string;
  before(async () => {
    t = await startTestApp(dialect);
    env = cliEnv(t.database.env);
    account = t.seed.accountId;
  });
  after(async () => t.close());

  it('add puts a number on the list (once), which the API shows and POST /v1/calls refuses', async () => {
    const added = await runJson(env, ['suppressions', 'add', '--account', account, '--to', '+14155550170', '--reason', 'Asked by phone']);
    assert.deepEqual(Object.keys(added), ['id', 'to', 'reason', 'created_at', 'created']);
    assert.match(added.id, /^sup_/);
    assert.equal(added.to, '+14155550170');
    assert.equal(added.reason, 'Asked by phone');
    assert.equal(added.created, true);

    const again = await runCli(env, ['suppressions', 'add', '--account', account, '--to', '+14155550170', '--reason', 'other']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^\+14155550170 was already on the suppression list of account acct_\w+; its entry is unchanged\./);
    assert.match(again.stdout, /reason: +Asked by phone/);

    // People's way of writing a number is read as E.164; its + and country code are never guessed.
    const text = await runCli(env, ['suppressions', 'add', '--account', account, '--to', '+1 (415) 555-0171']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Added \+14155550171 to the suppression list of account acct_\w+: it is not called, in test or live mode\./);

    const api = await getSuppressions(t);
    assert.deepEqual(
      api
        .json()
        .data.map((entry: { to: string }) => entry.to)
        .sort(),
      ['+14155550170', '+14155550171'],
    );
    const refused = await t.createCall(callBody(t, { to: '+14155550170' }));
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.json().error, 'number_suppressed');
  });

  it('list shows the whole list newest first, as a table or as JSON', async () => {
    const listed = await runJson(env, ['suppressions', 'list', '--account', account]);
    assert.deepEqual(Object.keys(listed), ['data']);
    assert.deepEqual((await getSuppressions(t)).json().data, listed.data, 'the API shows the same entries in the same order');
    const table = await runCli(env, ['suppressions', 'list', '--account', account]);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^NUMBER +ADDED +ID +REASON\n/);
    assert.match(table.stdout, /\+14155550170 +\S+ +sup_\w+ +Asked by phone/);
    assert.match(table.stdout, /\+14155550171 +\S+ +sup_\w+ +-/);

    const other = await t.newAccount({ agentId: 'agent_cli_other' });
    const empty = await runCli(env, ['suppressions', 'list', '--account', other.accountId]);
    assert.equal(empty.stdout, `The suppression list of account ${other.accountId} is empty.\n`);
  });

  it('remove takes a number off (then it may be called), and says so when it was not on the list', async () => {
    const removed = await runJson(env, ['suppressions', 'remove', '--account', account, '--to', '+14155550170']);
    assert.deepEqual(removed, { to: '+14155550170', account_id: account, removed: true });
    assert.equal((await t.createCall(callBody(t, { to: '+14155550170' }))).statusCode, 201);
    await runFailing(
      env,
      ['suppressions', 'remove', '--account', account, '--to', '+14155550170'],
      1,
      /^callgate: \+14155550170 is not on the suppression list of account acct_\w+\n$/,
    );
  });

  it('refuses a malformed number or reason before opening the database, and an unknown account', async () => {
    await runFailing(
      env,
      ['suppressions', 'add', '--account', account, '--to', '4155550170'],
      2,
      /--to must be a phone number in E\.164 format/,
    );
    await runFailing(env, ['suppressions', 'add', '--account', account], 2, /missing option --to NUMBER/);
    await runFailing(env, ['suppressions', 'remove', '--account', account, '--to', 'abc'], 2, /--to must be a phone number/);
    await runFailing(
      env,
      ['suppressions', 'add', '--account', account, '--to', '+14155550172', '--reason', 'x'.repeat(501)],
      2,
      /--reason has 501 characters; at most 500/,
    );
    await runFailing(env, ['suppressions', 'list', '--account', 'acct_missing'], 1, /no account with id "acct_missing"/);
    const help = await runCli(env, ['suppressions', '--help']);
    assert.match(help.stdout, /Usage: callgate suppressions <add\|list\|remove>/);
    const root = await runCli(env, ['--help']);
    for (const command of ['suppressions add', 'suppressions list', 'suppressions remove'])
      assert.ok(root.stdout.includes(command), command);
  });
});
