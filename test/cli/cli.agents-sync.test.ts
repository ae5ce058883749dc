/**
 * `callgate agents sync` on each database against the shared fake ElevenLabs (test/support), which answers
 * GET /v1/convai/agents in cursor pages and GET /v1/convai/phone-numbers as the documented shapes, and
 * refuses any request without the right xi-api-key.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs, type FakePhoneNumber } from '../support/fake-elevenlabs.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { workspaceNumber } from '../support/elevenlabs-fixtures.js';

const apiKey = 'xi-test-key';

const alpha = { agent_id: 'agent_alpha', name: 'Alpha' };
const gamma = { agent_id: 'agent_gamma', name: 'Gamma' };
const agents = [alpha, { agent_id: 'agent_beta', name: 'Beta' }, gamma, { agent_id: 'legacy-7', name: 'Old' }];

const phoneNumbers: FakePhoneNumber[] = [
  workspaceNumber('twilio', 'phnum_a', '+14155550100', 'Main', alpha),
  workspaceNumber('sip_trunk', 'phnum_g', '+14155550101', 'Trunk', gamma),
  workspaceNumber('twilio', 'phnum_free', '+14155550102', 'Spare'),
];

/** Request lines seen (`GET /v1/convai/agents?page_size=100`), with the API key each one carried. */
const requestLines = (fake: FakeElevenLabs) =>
  fake.requests.map((request) => {
    const query = request.query.toString();
    return { path: `${request.method} ${request.path}${query ? `?${query}` : ''}`, apiKey: request.headers['xi-api-key'] };
  });

await forEachDialect('callgate CLI agents sync', (dialect) => {
  let database: TestDatabase;
  let fake: FakeElevenLabs;
  let env: NodeJS.ProcessEnv;
  let accountId: string;

  before(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    fake = await startFakeElevenLabs({ apiKey });
    fake.agents = agents;
    fake.agentsPageSize = 2;
    fake.phoneNumbers = phoneNumbers;
    env = cliEnv({ ...database.env, ELEVENLABS_API_KEY: apiKey, ELEVENLABS_BASE_URL: fake.url });
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Sync'])).id;
  });
  after(async () => {
    await fake.close();
    await database.drop();
  });

  it('needs ELEVENLABS_API_KEY and names it when unset', async () => {
    await runFailing(
      cliEnv({ ...database.env, ELEVENLABS_BASE_URL: fake.url }),
      ['agents', 'sync', '--account', accountId],
      1,
      /^callgate: agents sync needs ELEVENLABS_API_KEY/,
    );
    await runFailing(env, ['agents', 'sync', '--account', 'acct_missing'], 1, /no account with id "acct_missing"/);
    assert.deepEqual(requestLines(fake), [], 'nothing was asked of ElevenLabs');
  });

  it('adds every agent of every page with its assigned number, reporting progress on stderr', async () => {
    const run = await runCli(env, ['agents', 'sync', '--account', accountId]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, 'listed 2 agents (page 1)…\nlisted 4 agents (page 2)…\n');
    assert.match(run.stdout, new RegExp(`^Synced account ${accountId} with ElevenLabs: 3 added, 0 updated, 1 skipped\\.\\n`));
    assert.match(run.stdout, /agent_alpha +Alpha +phnum_a +twilio +\+14155550100\n/);
    assert.match(run.stdout, /Skipped:\n {2}legacy-7: agent ids look like agent_/);
    assert.deepEqual(requestLines(fake), [
      { path: 'GET /v1/convai/agents?page_size=100', apiKey },
      { path: 'GET /v1/convai/agents?page_size=100&cursor=cursor_2', apiKey },
      { path: 'GET /v1/convai/phone-numbers', apiKey },
    ]);

    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    const byId = Object.fromEntries(listed.data.map((agent: Record<string, unknown>) => [agent.agent_id, agent]));
    // The account's own simulator agent (made with the account) stays beside the synced ones.
    assert.deepEqual(Object.keys(byId).sort(), ['agent_alpha', 'agent_beta', 'agent_gamma', 'agent_test_simulator']);
    assert.deepEqual(
      [byId.agent_alpha.provider, byId.agent_alpha.phone_number_id, byId.agent_alpha.phone_number_provider],
      ['elevenlabs', 'phnum_a', 'twilio'],
    );
    assert.equal(byId.agent_beta.phone_number_id, null);
    assert.equal(byId.agent_gamma.phone_number_provider, 'sip_trunk');
  });

  it('a second sync updates them; --json prints the result alone', async () => {
    const result = await runJson(env, ['agents', 'sync', '--account', accountId]);
    assert.deepEqual(Object.keys(result).sort(), ['added', 'agents', 'skipped', 'updated']);
    assert.equal(result.added, 0);
    assert.equal(result.updated, 3);
    const skipped: { agent_id: string; reason: string }[] = result.skipped;
    assert.deepEqual(
      skipped.map((entry) => entry.agent_id),
      ['legacy-7'],
    );
    assert.match(skipped[0]?.reason ?? '', /agent ids look like agent_/);
    assert.deepEqual(
      result.agents.map((agent: { agent_id: string }) => agent.agent_id),
      ['agent_alpha', 'agent_beta', 'agent_gamma'],
    );
    assert.equal(result.agents[0].account_id, accountId);
  });

  it('a refusal by ElevenLabs fails the command with the reason and changes nothing', async () => {
    // The key ElevenLabs no longer accepts: their 401 invalid_api_key.
    await runFailing(
      { ...env, ELEVENLABS_API_KEY: 'xi-revoked-key' },
      ['agents', 'sync', '--account', accountId],
      1,
      /^callgate: could not list agents: ElevenLabs refused the API key \(HTTP 401\); check ELEVENLABS_API_KEY/,
    );
    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    assert.equal(listed.data.length, 4);
  });

  it('an ElevenLabs that cannot be reached fails the command naming ELEVENLABS_BASE_URL', async () => {
    // A port that was free a moment ago: nothing listens there.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as net.AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    await runFailing(
      { ...env, ELEVENLABS_BASE_URL: `http://127.0.0.1:${port}` },
      ['agents', 'sync', '--account', accountId],
      1,
      /^callgate: could not list agents: ElevenLabs could not be reached \(ECONNREFUSED\); check ELEVENLABS_BASE_URL/,
    );
  });
});
