/**
 * Accounts and their portal users on SQLite and PostgreSQL, below the CLI and the portal: an account
 * comes with its simulator agent and first user, passwords are stored only as salted hashes and checked
 * against them, an email belongs to one user of the whole installation, and a new password replaces the old.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createAccount } from '../../src/features/identity/accounts.service.js';
import { addUser, authenticateUser, resetPassword } from '../../src/features/identity/users.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const password = 'correct horse battery';

await forEachDialect('Identity: accounts and users', (dialect) => {
  let t: TestApp;

  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const usersWithEmail = (email: string) => t.services.db.selectFrom('users').selectAll().where('email', '=', email).execute();

  it('creates an account with its simulator agent and its first user, whose email is stored lower-case', async () => {
    const account = await createAccount(t.services.db, t.services.clock, { name: ' Acme ', email: ' Founder@Acme.Test ', password });
    assert.match(account.id, /^acct_/);
    assert.equal(account.name, 'Acme');
    assert.deepEqual(account.agents, [{ agent_id: 'agent_test_simulator', name: 'Test agent (simulator)', provider: 'simulator' }]);
    const [user] = await usersWithEmail('founder@acme.test');
    assert.equal(user?.account_id, account.id);
    assert.deepEqual(account.users, [{ id: user?.id, email: 'founder@acme.test' }]);
    const agents = await t.services.db.selectFrom('agents').select('agent_id').where('account_id', '=', account.id).execute();
    assert.deepEqual(agents, [{ agent_id: 'agent_test_simulator' }]);
  });

  it('stores a password only as a salted hash, and signs in with it whatever the case of the email', async () => {
    const added = await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email: 'Ada@Example.Test', password });
    const twin = await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email: 'grace@example.test', password });
    const [ada] = await usersWithEmail('ada@example.test');
    const [grace] = await usersWithEmail('grace@example.test');
    assert.ok(ada && grace);
    assert.ok(!ada.password_hash.includes(password));
    assert.match(ada.password_hash, /^scrypt\$/);
    assert.notEqual(ada.password_hash, grace.password_hash, 'the same password, salted apart');

    assert.equal((await authenticateUser(t.services.db, ' ADA@example.test', password))?.id, added.id);
    assert.equal((await authenticateUser(t.services.db, 'grace@example.test', password))?.id, twin.id);
    assert.equal(await authenticateUser(t.services.db, 'ada@example.test', `${password}!`), null);
    assert.equal(await authenticateUser(t.services.db, 'nobody@example.test', password), null);
  });

  it('refuses a second user with the same email, in any account and any case, and keeps the first', async () => {
    const first = await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email: 'once@example.test', password });
    const other = await t.newAccount({ agentId: 'agent_other' });
    await assert.rejects(
      addUser(t.services.db, t.services.clock, { accountId: other.accountId, email: 'ONCE@example.test', password: 'another password' }),
      /a user with email once@example\.test exists already/,
    );
    await assert.rejects(
      createAccount(t.services.db, t.services.clock, { name: 'Copycat', email: 'once@example.test', password }),
      /a user with email once@example\.test exists already/,
    );
    assert.deepEqual(
      (await usersWithEmail('once@example.test')).map((user) => user.id),
      [first.id],
    );
    assert.equal(await authenticateUser(t.services.db, 'once@example.test', 'another password'), null);
  });

  it('refuses a short password, a malformed email and an unknown account, storing nothing', async () => {
    const add = (input: { accountId?: string; email: string; password: string }) =>
      addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, ...input });
    await assert.rejects(add({ email: 'short@example.test', password: 'too short' }), /at least 10 characters/);
    await assert.rejects(add({ email: 'not-an-email', password }), /not an email address/);
    await assert.rejects(add({ accountId: 'acct_missing', email: 'lost@example.test', password }), /no account with id "acct_missing"/);
    const stored = await t.services.db
      .selectFrom('users')
      .select('email')
      .where('email', 'in', ['short@example.test', 'not-an-email', 'lost@example.test'])
      .execute();
    assert.deepEqual(stored, []);
  });

  it('a new password replaces the old one', async () => {
    await addUser(t.services.db, t.services.clock, { accountId: t.seed.accountId, email: 'reset@example.test', password });
    const reset = await resetPassword(t.services.db, { email: 'Reset@example.test', password: 'a brand new secret' });
    assert.equal(reset.email, 'reset@example.test');
    assert.equal(await authenticateUser(t.services.db, 'reset@example.test', password), null);
    assert.equal((await authenticateUser(t.services.db, 'reset@example.test', 'a brand new secret'))?.id, reset.id);
    await assert.rejects(
      resetPassword(t.services.db, { email: 'nobody@example.test', password }),
      /no user with email nobody@example\.test/,
    );
  });
});
