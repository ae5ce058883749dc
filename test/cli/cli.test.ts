/**
 * The operator CLI on a database of its own per dialect: the commands run in-process through runCli (see
 * cli-runner.ts), a key they make is then used against the real app on the same database, and a few real
 * processes check the entry itself (bin/callgate.js, exit codes, the streams).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { sha256Hex } from '../../src/lib/json.js';
import { forEachDialect } from '../support/dialects.js';
import { testEnvDefaults } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { cliEnv, isBuilt, runCli, runFailing, runJson, spawnCli } from '../support/cli-runner.js';

const tokenPattern = /^cg_(live|test)_[0-9a-f]{64}$/;

describe('callgate CLI usage (no database needed)', () => {
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-cli-usage-'));
    env = cliEnv({ CALLGATE_DATA_DIR: dataDir });
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('--help lists every command; <noun> --help and <noun> <verb> --help narrow it down', async () => {
    const [root, group, verb] = await Promise.all([
      runCli(env, ['--help']),
      runCli(env, ['keys', '--help']),
      runCli(env, ['agents', 'add', '-h']),
    ]);
    assert.equal(root.code, 0);
    const commands = [
      'accounts create',
      'accounts list',
      'accounts update',
      'agents add',
      'agents list',
      'agents sync',
      'keys create',
      'keys list',
      'keys revoke',
      'webhooks create',
      'webhooks list',
      'webhooks enable',
      'webhooks delete',
      'webhooks rotate-secret',
      'webhooks test',
      'deliveries list',
      'events resend',
    ];
    for (const command of commands) {
      assert.ok(root.stdout.includes(command), command);
    }
    assert.equal(group.code, 0);
    assert.match(group.stdout, /Usage: callgate keys <create\|list\|revoke>/);
    assert.equal(verb.code, 0);
    assert.match(verb.stdout, /Usage: callgate agents add --account ACCOUNT_ID --agent-id AGENT_ID --name NAME/);
    assert.match(verb.stdout, /--provider simulator\|elevenlabs/);
  });

  it('a wrong command line exits 2 with a short message and opens no database', async () => {
    const cases: [string[], RegExp][] = [
      [[], /missing command/],
      [['phones', 'list'], /unknown command "phones"/],
      [['keys'], /missing command after "keys"/],
      [['keys', 'rotate'], /unknown command "keys rotate"/],
      [['accounts', 'create'], /missing option --name/],
      [['accounts', 'create', '--name'], /option --name needs a value/],
      // A value starting with a dash reads as an option to parseArgs: say how to give it, not that none was given.
      [['accounts', 'update', 'acct_x', '--max-concurrent-calls', '-1'], /write --max-concurrent-calls=VALUE/],
      [['deliveries', 'list', '--account', 'acct_x', '--limit', '-5'], /write --limit=VALUE/],
      [['accounts', 'create', '--name', ' '], /option --name must not be empty/],
      [['accounts', 'create', '--name', 'X', '--colour', 'red'], /unknown option --colour/],
      [['keys', 'create', '--account', 'acct_x', '--name', 'k', '--mode', 'staging'], /--mode must be one of live, test/],
      [
        ['agents', 'add', '--account', 'a', '--agent-id', 'agent_a', '--name', 'n', '--provider', 'x'],
        /--provider must be one of simulator, elevenlabs/,
      ],
      [['keys', 'revoke'], /missing argument KEY_ID/],
      [['keys', 'revoke', 'key_a', 'key_b'], /unexpected argument "key_b"/],
      [['webhooks', 'create', '--account', 'acct_x'], /missing option --url URL/],
      [['webhooks', 'delete'], /missing argument ENDPOINT_ID/],
      [['webhooks', 'rotate-secret', '--account', 'acct_x'], /unknown option --account/],
      [['webhooks', 'test', 'we_a', 'we_b'], /unexpected argument "we_b"/],
      [
        ['webhooks', 'create', '--account', 'acct_x', '--url', 'https://example.com', '--events', ' , '],
        /--events needs at least one value/,
      ],
      [['deliveries', 'list', '--account', 'acct_x', '--status', 'done'], /--status must be one of pending, succeeded, failed, got "done"/],
      [['deliveries', 'list', '--account', 'acct_x', '--limit', '0'], /--limit must be a whole number from 1 to 100/],
      [['deliveries', 'list', '--account', 'acct_x', '--limit', '2.5'], /--limit must be a whole number/],
      [['events', 'resend'], /missing argument EVENT_ID/],
      [['agents', 'sync'], /missing option --account/],
    ];
    await Promise.all(cases.map(([args, message]) => runFailing(env, args, 2, message)));
    assert.deepEqual(fs.readdirSync(dataDir), []);
  });

  it('a bad configuration exits 1 and names the variable', async () => {
    await runFailing(
      cliEnv({ DATABASE_URL: 'mysql://localhost/x' }),
      ['keys', 'list', '--account', 'acct_x'],
      1,
      /configuration error: DATABASE_URL/,
    );
  });
});

describe('callgate CLI as a process', () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-cli-process-'));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('bin/callgate.js runs the built CLI, and says how to build it when dist/ is missing', async () => {
    const run = await spawnCli('bin', cliEnv({ CALLGATE_DATA_DIR: dataDir }), ['--help']);
    if (isBuilt()) {
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /^callgate: operator commands/);
      assert.match(run.stdout, /keys create/);
      assert.equal(run.stderr, '');
    } else {
      assert.equal(run.code, 1);
      assert.match(run.stderr, /the CLI is not built yet; run "npm install" or "npm run build" first/);
    }
  });

  it('the entry writes stdout and stderr and exits 0, 1 or 2', async () => {
    const env = cliEnv({ CALLGATE_DATA_DIR: dataDir });
    // The first command migrates the new SQLite file; two processes migrating it at once could collide.
    const created = await spawnCli('source', env, ['accounts', 'create', '--name', 'Process', '--json']);
    const [failed, usage] = await Promise.all([
      spawnCli('source', env, ['keys', 'revoke', 'key_missing']),
      spawnCli('source', env, ['keys', 'revoke']),
    ]);
    assert.equal(created.code, 0, created.stderr);
    assert.equal(created.stderr, '');
    assert.match(created.stdout, /^\{"id":"acct_[0-9a-z]{26}".*\}\n$/);
    assert.deepEqual([failed.code, failed.stdout, failed.stderr], [1, '', 'callgate: no API key with id "key_missing"\n']);
    assert.equal(usage.code, 2);
    assert.equal(usage.stdout, '');
    assert.match(usage.stderr, /^callgate: missing argument KEY_ID\n\nRun "callgate keys revoke --help" for usage\.\n$/);
  });
});

await forEachDialect('callgate CLI', (dialect) => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let accountId: string;
  before(async () => {
    database = await createTestDatabase(dialect);
    env = cliEnv(database.env);
  });
  after(async () => database.drop());

  it('accounts create makes an account, with its first portal user when given an email and a password', async () => {
    const account = await runJson(env, ['accounts', 'create', '--name', ' Acme Health ']);
    assert.match(account.id, /^acct_[0-9a-z]{26}$/);
    assert.equal(account.name, 'Acme Health');
    assert.match(account.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(account.users, undefined);
    // A simulator agent comes with it, so that a test key of the account can place a call at once.
    assert.deepEqual(account.agents, [{ agent_id: 'agent_test_simulator', name: 'Test agent (simulator)', provider: 'simulator' }]);
    accountId = account.id;

    const withUser = await runJson(env, [
      'accounts',
      'create',
      '--name',
      'Beta',
      '--email',
      'Ops@Example.com',
      '--password',
      'correct horse battery',
    ]);
    assert.deepEqual(Object.keys(withUser).sort(), ['agents', 'created_at', 'id', 'max_concurrent_calls', 'name', 'users']);
    assert.equal(withUser.max_concurrent_calls, null, 'no concurrency limit by default');
    assert.equal(withUser.users.length, 1);
    assert.match(withUser.users[0].id, /^usr_/);
    assert.equal(withUser.users[0].email, 'ops@example.com');

    const text = await runCli(env, ['accounts', 'create', '--name', 'Gamma']);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^Created account acct_[0-9a-z]{26}\./);
    assert.match(text.stdout, /name: +Gamma/);
    assert.match(text.stdout, /agent: +agent_test_simulator \(simulator: test calls work at once\)/);
  });

  it('accounts list shows every account with its id, oldest first', async () => {
    const listed = await runJson(env, ['accounts', 'list']);
    assert.deepEqual(Object.keys(listed), ['data']);
    assert.deepEqual(
      listed.data.map((account: { name: string }) => account.name),
      ['Acme Health', 'Beta', 'Gamma'],
    );
    assert.deepEqual(listed.data[0], {
      id: accountId,
      name: 'Acme Health',
      users: 0,
      created_at: listed.data[0].created_at,
      max_concurrent_calls: null,
    });
    assert.equal(listed.data[1].users, 1);

    const text = await runCli(env, ['accounts', 'list']);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^ID +NAME +USERS +MAX CONCURRENT CALLS +CREATED\n/);
    assert.match(text.stdout, new RegExp(`${accountId} +Acme Health +0 +no limit +\\d{4}-`));
  });

  it('agents add creates an agent (simulator by default), then updates the one with the same id', async () => {
    const added = await runJson(env, ['agents', 'add', '--account', accountId, '--agent-id', 'agent_reminders', '--name', 'Reminders']);
    assert.equal(added.created, true);
    assert.match(added.id, /^agt_/);
    assert.equal(added.account_id, accountId);
    assert.equal(added.agent_id, 'agent_reminders');
    assert.equal(added.provider, 'simulator');
    assert.equal(added.phone_number_id, null);

    const toElevenlabs = [
      'agents',
      'add',
      '--account',
      accountId,
      '--agent-id',
      'agent_reminders',
      '--name',
      'Reminders v2',
      '--provider',
      'elevenlabs',
      '--phone-number-id',
      'phnum_123',
    ];
    // The server's rule holds here too: no ElevenLabs agents without ElevenLabs credentials.
    await runFailing(env, toElevenlabs, 1, /agents of provider elevenlabs cannot be added: this server has no ELEVENLABS_API_KEY set/);
    const updated = await runJson({ ...env, ELEVENLABS_API_KEY: 'xi-test-key-never-used' }, toElevenlabs);
    assert.equal(updated.created, false);
    assert.equal(updated.id, added.id);
    assert.equal(updated.provider, 'elevenlabs');
    assert.equal(updated.phone_number_id, 'phnum_123');

    const text = await runCli(env, ['agents', 'add', '--account', accountId, '--agent-id', 'agent_sim', '--name', 'Sim']);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^Added agent agent_sim in account acct_/);
  });

  it('agents list shows the agents of one account only', async () => {
    const other = await runJson(env, ['accounts', 'create', '--name', 'Other']);
    await runJson(env, ['agents', 'add', '--account', other.id, '--agent-id', 'agent_elsewhere', '--name', 'Elsewhere']);

    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    assert.deepEqual(Object.keys(listed), ['data']);
    assert.deepEqual(listed.data.map((agent: { agent_id: string }) => agent.agent_id).sort(), [
      'agent_reminders',
      'agent_sim',
      'agent_test_simulator',
    ]);
    const reminders = listed.data.find((agent: { agent_id: string }) => agent.agent_id === 'agent_reminders');
    assert.equal(reminders.name, 'Reminders v2');
    assert.equal(reminders.provider, 'elevenlabs');

    const text = await runCli(env, ['agents', 'list', '--account', accountId]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^AGENT ID +NAME +PROVIDER +PROVIDER AGENT +PHONE NUMBER ID +CREATED +PHONE NUMBER\n/);
    // An ElevenLabs agent's id is its own: no provider agent id beside it.
    assert.match(text.stdout, /agent_reminders +Reminders v2 +elevenlabs +- +phnum_123 /);
    assert.equal(reminders.provider_agent_id, null);
    assert.doesNotMatch(text.stdout, /agent_elsewhere/);
  });

  it('keys create makes test keys by default and live ones when asked, shows each token once, and keys list never shows it', async () => {
    // Without --mode, a test key (the CLI's default, as the portal's form), and it says so.
    const byDefault = await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'rehearsal']);
    assert.equal(byDefault.mode, 'test');
    assert.match(byDefault.token, /^cg_test_[0-9a-f]{64}$/);
    const defaultText = await runCli(env, ['keys', 'create', '--account', accountId, '--name', 'rehearsal-text']);
    assert.match(defaultText.stdout, /^Created test key key_/);
    assert.match(defaultText.stdout, /mode: +test: simulated calls only \(--mode live for real calls\)/);

    const live = await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'billing-integration', '--mode', 'live']);
    assert.match(live.id, /^key_[0-9a-z]{26}$/);
    assert.equal(live.account_id, accountId);
    assert.equal(live.name, 'billing-integration');
    assert.equal(live.mode, 'live');
    assert.equal(live.status, 'active');
    assert.match(live.token, tokenPattern);
    assert.ok(live.token.startsWith('cg_live_'));
    assert.equal(live.prefix, live.token.slice(0, 12));
    assert.equal(live.token_hash, undefined);

    const test = await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'staging', '--mode', 'test']);
    assert.equal(test.mode, 'test');
    assert.match(test.token, /^cg_test_[0-9a-f]{64}$/);
    assert.equal(test.prefix, test.token.slice(0, 12));

    const text = await runCli(env, ['keys', 'create', '--account', accountId, '--name', 'human', '--mode', 'test']);
    assert.equal(text.code, 0);
    const shown = text.stdout.match(/cg_test_[0-9a-f]{64}/g) ?? [];
    assert.equal(shown.length, 1, 'the token appears exactly once');
    assert.match(text.stdout, /^Created test key key_/);
    assert.match(text.stdout, /mode: +test: simulated calls only \(--mode live for real calls\)/);
    const liveText = await runCli(env, ['keys', 'create', '--account', accountId, '--name', 'human-live', '--mode', 'live']);
    assert.match(liveText.stdout, /^Created live key key_/);
    assert.match(liveText.stdout, /mode: +live: real calls through the voice provider/);
    assert.match(text.stdout, /shown only this once/);

    const runs = await Promise.all([
      runCli(env, ['keys', 'list', '--account', accountId]),
      runCli(env, ['keys', 'list', '--account', accountId, '--json']),
    ]);
    for (const run of runs) {
      assert.equal(run.code, 0);
      for (const key of [live, test]) {
        assert.ok(run.stdout.includes(key.prefix), 'listed by prefix');
        assert.ok(!run.stdout.includes(key.token), 'no token');
        assert.ok(!run.stdout.includes(sha256Hex(key.token)), 'no token hash');
      }
      assert.doesNotMatch(run.stdout, /token/);
    }
    const listed = await runJson(env, ['keys', 'list', '--account', accountId]);
    assert.equal(listed.data.length, 6);
    for (const key of listed.data) {
      assert.deepEqual(Object.keys(key).sort(), [
        'account_id',
        'created_at',
        'id',
        'last_used_at',
        'mode',
        'name',
        'prefix',
        'revoked_at',
        'status',
      ]);
    }
  });

  it('a key made by the CLI works against the real app until keys revoke, which is for good', async () => {
    const key = await runJson(env, ['keys', 'create', '--account', accountId, '--name', 'e2e', '--mode', 'test']);
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    const app = buildApp(services);
    try {
      await app.ready();
      const placeCall = () =>
        app.inject({
          method: 'POST',
          url: '/v1/calls',
          headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
          payload: { agent_id: 'agent_sim', to: '+14155550123' },
        });
      const placed = await placeCall();
      assert.equal(placed.statusCode, 201, placed.body);
      // The account's own simulator agent takes calls from the first minute, with no agent added by hand.
      const fromNewAccount = await app.inject({
        method: 'POST',
        url: '/v1/calls',
        headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
        payload: { agent_id: 'agent_test_simulator', to: '+14155550123' },
      });
      assert.equal(fromNewAccount.statusCode, 201, fromNewAccount.body);

      const revoked = await runJson(env, ['keys', 'revoke', key.id]);
      assert.equal(revoked.id, key.id);
      assert.equal(revoked.status, 'revoked');
      assert.match(revoked.revoked_at, /^\d{4}-/);
      assert.equal(revoked.token, undefined);

      const refused = await placeCall();
      assert.equal(refused.statusCode, 401);
      assert.equal(refused.json().error, 'unauthorized');

      const again = await runJson(env, ['keys', 'revoke', key.id]);
      assert.equal(again.revoked_at, revoked.revoked_at, 'the first revocation time stays');
      const listed = await runJson(env, ['keys', 'list', '--account', accountId]);
      const row = listed.data.find((candidate: { id: string }) => candidate.id === key.id);
      assert.equal(row.status, 'revoked');
      assert.notEqual(row.last_used_at, null, 'the successful request was recorded');
    } finally {
      await app.close();
      await services.close();
    }
  });

  it('failures exit 1 with the reason on stderr and nothing on stdout', async () => {
    const cases: [string[], RegExp][] = [
      [
        ['agents', 'list', '--account', 'acct_missing'],
        /^callgate: no account with id "acct_missing" in this database; `npx callgate accounts list` shows the ids, and the CLI reads DATABASE_URL or CALLGATE_DATA_DIR from its environment or a .env file in its folder: give it the server's\n$/,
      ],
      [['agents', 'add', '--account', 'acct_missing', '--agent-id', 'agent_x', '--name', 'X'], /no account with id "acct_missing"/],
      [['keys', 'create', '--account', 'acct_missing', '--name', 'k', '--json'], /no account with id "acct_missing"/],
      [['keys', 'list', '--account', 'acct_missing'], /no account with id "acct_missing"/],
      [['keys', 'revoke', 'key_missing'], /no API key with id "key_missing"/],
      // Validation errors of the services come through with their own message.
      [['agents', 'add', '--account', accountId, '--agent-id', 'reminders', '--name', 'X'], /agent ids look like agent_/],
      [['accounts', 'create', '--name', 'X', '--email', 'a@example.com'], /give both an email and a password, or neither/],
      [['accounts', 'create', '--name', 'X', '--email', 'a@example.com', '--password', 'short', '--json'], /at least 10 characters/],
      [['accounts', 'create', '--name', 'X', '--email', 'ops@example.com', '--password', 'long enough password'], /exists already/],
      [['webhooks', 'create', '--account', 'acct_missing', '--url', 'https://example.com/hooks'], /no account with id "acct_missing"/],
      [['webhooks', 'list', '--account', 'acct_missing', '--json'], /no account with id "acct_missing"/],
      [['webhooks', 'delete', 'we_missing'], /^callgate: no webhook endpoint with id "we_missing"\n$/],
      [['webhooks', 'rotate-secret', 'we_missing'], /no webhook endpoint with id "we_missing"/],
      [['webhooks', 'test', 'we_missing', '--json'], /no webhook endpoint with id "we_missing"/],
      [['deliveries', 'list', '--account', 'acct_missing'], /no account with id "acct_missing"/],
      [['events', 'resend', 'evt_missing'], /^callgate: no event evt_missing\n$/],
      [['agents', 'sync', '--account', accountId], /agents sync needs ELEVENLABS_API_KEY/],
    ];
    await Promise.all(cases.map(([args, message]) => runFailing(env, args, 1, message)));
    const agents = await runJson(env, ['agents', 'list', '--account', accountId]);
    assert.equal(agents.data.length, 3, 'nothing was added by the failed commands');
  });
});
