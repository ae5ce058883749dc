/**
 * `callgate users add` and `users reset-password`, in-process, on a database of their own per dialect; the
 * user they make then signs in to the portal of the real app on the same database.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/container.js';
import { forEachDialect } from '../support/dialects.js';
import { testEnvDefaults } from '../support/test-app.js';
import { sessionCookieOf, signInForm } from '../support/portal-client.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';

await forEachDialect('callgate CLI users', (dialect) => {
  let database: TestDatabase;
  let env: NodeJS.ProcessEnv;
  let accountId: string;

  before(async () => {
    database = await createTestDatabase(dialect);
    env = cliEnv(database.env);
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Acme'])).id;
  });
  after(async () => database.drop());

  async function signIn(services: Services, email: string, password: string) {
    const app = buildApp(services);
    try {
      const form = await signInForm(app);
      const response = await app.inject({
        method: 'POST',
        url: '/developers/sign-in',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://localhost:80', cookie: `cg_signin=${form.token}` },
        payload: new URLSearchParams({ _csrf: form.token, email, password }).toString(),
      });
      return { status: response.statusCode, cookie: `cg_session=${sessionCookieOf(response) ?? ''}` };
    } finally {
      await app.close();
    }
  }

  it('adds a user who signs in to the portal; a new password ends their sessions', async () => {
    const user = await runJson(env, ['users', 'add', '--account', accountId, '--email', 'Ada@Acme.test', '--password', 'first password']);
    assert.match(user.id, /^usr_/);
    assert.equal(user.email, 'ada@acme.test');
    assert.equal(user.account_id, accountId);
    assert.equal('password_hash' in user, false, 'no hash in the output');

    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      const first = await signIn(services, 'ada@acme.test', 'first password');
      assert.equal(first.status, 303);
      const reset = await runJson(env, ['users', 'reset-password', '--email', 'ADA@acme.test', '--password', 'second password']);
      assert.equal(reset.sessions_ended, 1);
      const app = buildApp(services);
      const old = await app.inject({ method: 'GET', url: '/developers', headers: { cookie: first.cookie } });
      await app.close();
      assert.equal(old.statusCode, 303, 'the old session is over');
      assert.equal((await signIn(services, 'ada@acme.test', 'first password')).status, 401);
      assert.equal((await signIn(services, 'ada@acme.test', 'second password')).status, 303);
    } finally {
      await services.close();
    }
  });

  it("prints a sign-in pointer for people: the server's address when given it, else how to give it (no guessed port)", async () => {
    const bare = { ...env };
    delete bare.PORT;
    delete bare.CALLGATE_PUBLIC_URL;
    const run = await runCli(bare, ['users', 'add', '--account', accountId, '--email', 'grace@acme.test', '--password', 'long enough!']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^Added user grace@acme\.test to account acct_/);
    assert.doesNotMatch(run.stdout, /Sign in at http/, 'no address guessed');
    assert.match(
      run.stdout,
      /^Sign in at the server's \/developers page \(.*give this command CALLGATE_PUBLIC_URL, or PORT, as the server has them/m,
    );
    const given = await runCli({ ...bare, CALLGATE_PUBLIC_URL: 'https://calls.example.com' }, [
      ...['users', 'add', '--account', accountId, '--email', 'hedy@acme.test', '--password', 'long enough!'],
    ]);
    assert.match(given.stdout, /^Sign in at https:\/\/calls\.example\.com\/developers$/m);
    const port = await runCli({ ...bare, PORT: '3999' }, [
      'users',
      'add',
      '--account',
      accountId,
      '--email',
      'joan@acme.test',
      '--password',
      'long enough!',
    ]);
    assert.match(port.stdout, /^Sign in at http:\/\/127\.0\.0\.1:3999\/developers$/m);
  });

  it('refuses what it cannot do, naming why', async () => {
    await runFailing(
      env,
      ['users', 'add', '--account', 'acct_nope', '--email', 'x@acme.test', '--password', 'long enough!'],
      1,
      /no account with id "acct_nope"/,
    );
    await runFailing(
      env,
      ['users', 'add', '--account', accountId, '--email', 'ada@acme.test', '--password', 'long enough!'],
      1,
      /exists already/,
    );
    await runFailing(
      env,
      ['users', 'add', '--account', accountId, '--email', 'not-an-email', '--password', 'long enough!'],
      1,
      /not an email address/,
    );
    await runFailing(
      env,
      ['users', 'add', '--account', accountId, '--email', 'short@acme.test', '--password', 'short'],
      1,
      /at least 10 characters/,
    );
    await runFailing(
      env,
      ['users', 'reset-password', '--email', 'nobody@acme.test', '--password', 'long enough!'],
      1,
      /no user with email nobody@acme\.test/,
    );
    await runFailing(env, ['users', 'add', '--email', 'x@acme.test', '--password', 'long enough!'], 2, /missing option --account/);
  });
});
