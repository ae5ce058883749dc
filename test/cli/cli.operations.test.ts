/**
 * The operator's commands for the installation itself: `backup` (an online copy while a real server
 * process writes), `doctor` (configuration, database, provider credentials against the fake ElevenLabs,
 * webhook endpoint addresses) and the reads `users list` and `calls list`, on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { webhookEndpointRow } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('callgate tools: usage', () => {
  const env = cliEnv({ CALLGATE_DATA_DIR: path.join(os.tmpdir(), 'callgate-tools-usage-unused') });

  it('--help lists migrate, backup, doctor, users list and calls list; a tool takes no second word', async () => {
    const root = await runCli(env, ['--help']);
    for (const command of ['migrate', 'backup', 'doctor', 'users list', 'calls list']) assert.ok(root.stdout.includes(command), command);
    const backup = await runCli(env, ['backup', '--help']);
    assert.equal(backup.code, 0);
    assert.match(backup.stdout, /Usage: callgate backup --to FILE \[--json\]/);
    await runFailing(env, ['migrate', 'now'], 2, /unexpected "now" after "migrate"/);
    await runFailing(env, ['backup'], 2, /missing option --to/);
    await runFailing(env, ['calls', 'list'], 2, /missing option --account/);
    await runFailing(
      env,
      ['calls', 'list', '--account', 'a', '--status', 'ringing'],
      2,
      /--status must be one of initiated, completed, failed/,
    );
  });
});

await forEachDialect('callgate backup, doctor and reads', (dialect) => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let handle: DatabaseHandle;
  let fake: FakeElevenLabs;
  let accountId: string;
  let token: string;
  let server: ServerProcess | undefined;
  let scratch: string;

  before(async () => {
    database = await createTestDatabase(dialect);
    env = cliEnv(database.env);
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-backup-'));
    fake = await startFakeElevenLabs({ apiKey: 'xi-good-key' });
    await runJson(env, ['migrate']);
    handle = openDatabase(database.config);
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Ops'])).id;
    token = (await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'ops', '--mode', 'test'])).token;
  });
  after(async () => {
    await server?.stop();
    await handle?.destroy();
    await fake?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
    await database?.drop();
  });

  it('users list and calls list show the account’s users and calls, with --status and --limit', async () => {
    assert.deepEqual(await runJson(env, ['users', 'list', '--account', accountId]), { data: [] });
    const empty = await runCli(env, ['users', 'list', '--account', accountId]);
    assert.match(empty.stdout, /has no users\. Add one with: npx callgate users add/);
    await runJson(env, ['users', 'add', '--account', accountId, '--email', 'ops@example.com', '--password', 'long enough password']);
    const users = await runJson(env, ['users', 'list', '--account', accountId]);
    assert.deepEqual(
      users.data.map((user: Record<string, unknown>) => [user.email, user.account_id, 'password_hash' in user]),
      [['ops@example.com', accountId, false]],
    );
    await runFailing(env, ['users', 'list', '--account', 'acct_nope'], 1, /no account with id "acct_nope"/);

    const now = new Date();
    const call = (i: number, status: 'initiated' | 'completed' | 'failed') => ({
      id: `call_ops_${i}`,
      account_id: accountId,
      api_key_id: 'key_x',
      agent_id: 'agent_test_simulator',
      agent_ref: 'agent_x',
      mode: 'test' as const,
      provider: 'simulator' as const,
      provider_conversation_id: `conv_ops_${i}`,
      to_number: '+14155550100',
      metadata: null,
      status,
      created_at: new Date(now.getTime() + i).toISOString(),
      updated_at: now.toISOString(),
      next_check_at: null,
      started_at: null,
      ended_at: null,
      duration_seconds: status === 'completed' ? 5 : null,
      transcript_summary: null,
      failure_reason: status === 'failed' ? 'no_answer' : null,
      failure_message: null,
      failed_at: status === 'failed' ? now.toISOString() : null,
      batch_id: null,
      reference: null,
    });
    // The key and agent of the rows are not checked by calls list; the foreign keys are (SQLite enforces them).
    const key = await handle.db.selectFrom('api_keys').select('id').where('account_id', '=', accountId).executeTakeFirstOrThrow();
    const agent = await handle.db.selectFrom('agents').select('id').where('account_id', '=', accountId).executeTakeFirstOrThrow();
    await handle.db
      .insertInto('calls')
      .values(
        [call(1, 'completed'), call(2, 'failed'), call(3, 'completed'), call(4, 'initiated')].map((row) => ({
          ...row,
          api_key_id: key.id,
          agent_ref: agent.id,
        })),
      )
      .execute();
    const all = await runJson(env, ['calls', 'list', '--account', accountId]);
    assert.deepEqual(
      all.data.map((c: Record<string, unknown>) => c.id),
      ['call_ops_4', 'call_ops_3', 'call_ops_2', 'call_ops_1'],
    );
    assert.equal(all.has_more, false);
    const completed = await runJson(env, ['calls', 'list', '--account', accountId, '--status', 'completed', '--limit', '1']);
    assert.deepEqual(
      completed.data.map((c: Record<string, unknown>) => c.id),
      ['call_ops_3'],
    );
    assert.equal(completed.has_more, true);
    const text = await runCli(env, ['calls', 'list', '--account', accountId, '--status', 'failed']);
    assert.match(text.stdout, /call_ops_2\s+failed/);
    const none = await runCli(env, ['calls', 'list', '--account', (await runJson(env, ['accounts', 'create', '--name', 'Empty'])).id]);
    assert.match(none.stdout, /has no calls\./);
  });

  const insertEndpoint = async (id: string, url: string, enabled: boolean) => {
    await handle.db
      .insertInto('webhook_endpoints')
      .values(webhookEndpointRow(accountId, id, url, new Date().toISOString(), enabled))
      .execute();
  };

  it('doctor: all OK with good credentials and a public endpoint; FAIL with what to do for a bad key and bad addresses', async () => {
    const doctorEnv = { ...env, ELEVENLABS_API_KEY: 'xi-good-key', ELEVENLABS_BASE_URL: fake.url };
    await insertEndpoint('we_good', 'https://8.8.8.8/hook', true);
    const good = await runJson(doctorEnv, ['doctor']);
    assert.equal(good.ok, true);
    assert.deepEqual(
      good.checks.map((check: Record<string, string>) => [check.name, check.status]),
      [
        ['configuration', 'ok'],
        ['database', 'ok'],
        ['webhook endpoint we_good', 'ok'],
        ['provider elevenlabs', 'ok'],
        ['provider retell', 'skip'],
        ['provider vapi', 'skip'],
      ],
    );
    // The smallest read there is, and nothing else.
    assert.deepEqual(
      fake.requests.map((request) => [request.method, request.path, request.query.get('page_size')]),
      [['GET', '/v1/convai/agents', '1']],
    );

    await insertEndpoint('we_private', 'https://10.1.2.3/hook', true);
    await insertEndpoint('we_nowhere', 'https://callgate-doctor-test.invalid/hook', true);
    await insertEndpoint('we_disabled', 'https://10.9.9.9/hook', false);
    const bad = await runCli({ ...doctorEnv, ELEVENLABS_API_KEY: 'xi-wrong-key' }, ['doctor']);
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /^OK {4}configuration: valid/m);
    assert.match(bad.stdout, /^OK {4}database: /m);
    assert.match(bad.stdout, /^OK {4}webhook endpoint we_good: https:\/\/8\.8\.8\.8\/hook/m);
    assert.match(
      bad.stdout,
      /^FAIL {2}webhook endpoint we_private: https:\/\/10\.1\.2\.3\/hook .*\n {6}what to do: .*change its URL in the portal.*callgate webhooks delete we_private/m,
    );
    assert.match(bad.stdout, /^FAIL {2}webhook endpoint we_nowhere: .*does not resolve/m);
    assert.doesNotMatch(bad.stdout, /we_disabled/);
    assert.match(
      bad.stdout,
      /^FAIL {2}provider elevenlabs: ElevenLabs refused the API key \(HTTP 401\); check ELEVENLABS_API_KEY\n {6}what to do: /m,
    );
    assert.match(bad.stdout, /3 checks failed\.$/m);

    const noKey = await runJson(env, ['doctor']).catch(() => undefined);
    assert.equal(noKey, undefined, 'still exits 1 for the endpoints');
    const json = await runCli(env, ['doctor', '--json']);
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout);
    assert.equal(report.ok, false);
    assert.deepEqual(report.checks.at(-3), {
      name: 'provider elevenlabs',
      status: 'skip',
      detail: 'ELEVENLABS_API_KEY is not set: only simulated calls can be placed',
    });
    await handle.db.deleteFrom('webhook_endpoints').where('id', 'in', ['we_private', 'we_nowhere']).execute();
  });

  it('doctor: an endpoint that stopped answering is WARN, with since when, its next probe and what to do, and exit 0', async () => {
    await insertEndpoint('we_silent', 'https://8.8.4.4/hook', true);
    const since = '2026-01-02T03:04:05.000Z';
    const nextTry = new Date(Date.now() + 60 * 60_000).toISOString();
    await handle.db
      .insertInto('webhook_endpoint_backoffs')
      .values({ endpoint_id: 'we_silent', failures: 7, probes: 2, next_try_at: nextTry, since, updated_at: since })
      .execute();
    try {
      const run = await runCli(env, ['doctor']);
      assert.equal(run.code, 0, run.stdout);
      assert.match(
        run.stdout,
        new RegExp(
          `^WARN {2}webhook endpoint we_silent: https://8\\.8\\.4\\.4/hook is failing since ${since.replace(/\./g, '\\.')} \\(\\d+ days ago\\)\\. Last error: none on record\\. Next try: ${nextTry.replace(/\./g, '\\.')} \\(in \\d+ minutes\\): it does not answer, so its deliveries wait for that one probe\n {6}what to do: fix the receiver so that it answers 2xx within CALLGATE_WEBHOOK_TIMEOUT_MS .*account ${accountId}[ ,]`,
          'm',
        ),
      );
      assert.match(run.stdout, /^All checks passed \(1 warning\)\.$/m);
    } finally {
      await handle.db.deleteFrom('webhook_endpoint_backoffs').where('endpoint_id', '=', 'we_silent').execute();
      await handle.db.deleteFrom('webhook_endpoints').where('id', '=', 'we_silent').execute();
    }
  });

  it('doctor names the setting that makes a local endpoint valid, and judges it as a server with that setting would', async () => {
    await insertEndpoint('we_local', 'http://127.0.0.1:8080/webhooks', true);
    try {
      const without = await runCli(env, ['doctor']);
      assert.equal(without.code, 1);
      assert.match(
        without.stdout,
        /^FAIL {2}webhook endpoint we_local: http:\/\/127\.0\.0\.1:8080\/webhooks must use https, unless the server runs with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true .*\n {6}what to do: if your server has CALLGATE_WEBHOOK_ALLOW_PRIVATE=true, give doctor the same setting: CALLGATE_WEBHOOK_ALLOW_PRIVATE=true npx callgate doctor; otherwise/m,
      );
      const withSetting = JSON.parse((await runCli({ ...env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' }, ['doctor', '--json'])).stdout);
      const local = withSetting.checks.find((check: { name: string }) => check.name === 'webhook endpoint we_local');
      assert.equal(local?.status, 'ok', JSON.stringify(withSetting));
    } finally {
      await handle.db.deleteFrom('webhook_endpoints').where('id', '=', 'we_local').execute();
    }
  });

  it('doctor reports a bad setting, and a database it cannot reach, as FAIL with exit 1', async () => {
    const config = await runCli({ ...env, CALLGATE_WEBHOOK_CONCURRENCY: 'lots' }, ['doctor']);
    assert.equal(config.code, 1);
    assert.match(config.stdout, /^FAIL {2}configuration: CALLGATE_WEBHOOK_CONCURRENCY must be a whole number, got "lots"/m);
    const unreachable =
      dialect === 'postgres'
        ? { ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing' }
        : { ...env, CALLGATE_DATA_DIR: path.join(scratch, 'no-such-folder') };
    const run = await runCli(unreachable, ['doctor']);
    assert.equal(run.code, 1);
    assert.match(
      run.stdout,
      dialect === 'postgres'
        ? /^FAIL {2}database: cannot read the database: .*\n {6}what to do: check DATABASE_URL/m
        : /^FAIL {2}database: there is no database at /m,
    );
    if (dialect === 'sqlite') assert.equal(fs.existsSync(path.join(scratch, 'no-such-folder')), false, 'doctor made nothing');
  });

  it(
    dialect === 'sqlite' ? 'backup copies the database while a server process writes, and never overwrites' : 'backup says to use pg_dump',
    async () => {
      const target = path.join(scratch, 'copy.sqlite');
      if (dialect === 'postgres') {
        await runFailing(env, ['backup', '--to', target], 1, /uses PostgreSQL \(DATABASE_URL\): back it up with pg_dump/);
        assert.equal(fs.existsSync(target), false);
        return;
      }
      server = await startServerProcess({ env: database.env });
      let writing = true;
      let written = 0;
      const writer = (async () => {
        while (writing) {
          const res = await fetch(`${server?.url}/v1/calls`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ agent_id: 'agent_test_simulator', to: '+14155550123' }),
          });
          assert.equal(res.status, 201, await res.text());
          written++;
        }
      })();
      // Wait for writes to be under way, back up during them, then keep writing a little after.
      while (written < 5) await new Promise((resolve) => setImmediate(resolve));
      const backup = await runJson(env, ['backup', '--to', target]);
      const afterBackup = written;
      while (written < afterBackup + 5) await new Promise((resolve) => setImmediate(resolve));
      writing = false;
      await writer;
      assert.equal(backup.file, target);
      assert.ok(backup.bytes > 0);

      const copy = new BetterSqlite3(target, { readonly: true });
      try {
        assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
        const calls = (copy.prepare('select count(*) as n from calls where account_id = ?').get(accountId) as { n: number }).n;
        assert.ok(calls >= 5 + 4, `the calls made before the backup are in it (${calls})`);
        assert.equal((copy.prepare('select count(*) as n from accounts where id = ?').get(accountId) as { n: number }).n, 1);
      } finally {
        copy.close();
      }
      assert.deepEqual(
        fs.readdirSync(scratch).filter((name) => name.includes('partial')),
        [],
        'no partial file left',
      );
      const before = fs.statSync(target).mtimeMs;
      await runFailing(env, ['backup', '--to', target], 1, /already exists: a backup never overwrites a file/);
      assert.equal(fs.statSync(target).mtimeMs, before);
    },
  );
});
