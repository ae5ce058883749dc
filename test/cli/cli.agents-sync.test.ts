/**
 * `callgate agents sync` on each database against a small local fake of the two ElevenLabs endpoints it
 * reads: GET /v1/convai/agents (cursor pages) and GET /v1/convai/phone-numbers.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../helpers/dialects.js';
import { createTestDatabase, type TestDatabase } from '../helpers/test-db.js';
import { cliEnv, runCli, runFailing, runJson } from './cli-run.js';

const apiKey = 'xi-test-key';

interface FakeElevenLabs {
  readonly url: string;
  /** Request lines seen (`GET /v1/convai/agents?page_size=100`), with the API key each one carried. */
  readonly requests: { path: string; apiKey: string | undefined }[];
  /** When set, every request is answered with this status. */
  failWith: number | undefined;
  close(): Promise<void>;
}

const agentPages: Record<string, unknown> = {
  first: { agents: [{ agent_id: 'agent_alpha', name: 'Alpha' }, { agent_id: 'agent_beta', name: 'Beta' }], next_cursor: 'cur_2', has_more: true },
  cur_2: { agents: [{ agent_id: 'agent_gamma', name: 'Gamma' }, { agent_id: 'legacy-7', name: 'Old' }], next_cursor: null, has_more: false },
};

const phoneNumbers = [
  { phone_number_id: 'phnum_a', provider: 'twilio', phone_number: '+14155550100', label: 'Main', assigned_agent: { agent_id: 'agent_alpha', agent_name: 'Alpha' } },
  { phone_number_id: 'phnum_g', provider: 'sip_trunk', phone_number: '+14155550101', label: 'Trunk', assigned_agent: { agent_id: 'agent_gamma', agent_name: 'Gamma' } },
  { phone_number_id: 'phnum_free', provider: 'twilio', phone_number: '+14155550102', label: 'Spare', assigned_agent: null },
];

async function startFakeElevenLabs(): Promise<FakeElevenLabs> {
  const fake: FakeElevenLabs = { url: '', requests: [], failWith: undefined, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    fake.requests.push({ path: `${req.method} ${url.pathname}${url.search}`, apiKey: req.headers['xi-api-key'] as string | undefined });
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (fake.failWith !== undefined) return send(fake.failWith, { detail: { status: 'invalid_api_key', message: 'Invalid API key' } });
    if (url.pathname === '/v1/convai/agents') return send(200, agentPages[url.searchParams.get('cursor') ?? 'first']);
    if (url.pathname === '/v1/convai/phone-numbers') return send(200, phoneNumbers);
    send(404, { detail: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(fake, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

await forEachDialect('callgate CLI agents sync', (dialect) => {
  let database: TestDatabase;
  let fake: FakeElevenLabs;
  let env: NodeJS.ProcessEnv;
  let accountId: string;

  before(async () => {
    database = await createTestDatabase(dialect);
    fake = await startFakeElevenLabs();
    env = cliEnv({ ...database.env, ELEVENLABS_API_KEY: apiKey, ELEVENLABS_BASE_URL: fake.url });
    accountId = (await runJson(env, ['accounts', 'create', '--name', 'Sync'])).id;
  });
  after(async () => {
    await fake.close();
    await database.drop();
  });

  it('needs ELEVENLABS_API_KEY and names it when unset', async () => {
    await runFailing(cliEnv({ ...database.env, ELEVENLABS_BASE_URL: fake.url }), ['agents', 'sync', '--account', accountId], 1, /^callgate: agents sync needs ELEVENLABS_API_KEY/);
    await runFailing(env, ['agents', 'sync', '--account', 'acct_missing'], 1, /no account with id "acct_missing"/);
    assert.deepEqual(fake.requests, [], 'nothing was asked of ElevenLabs');
  });

  it('adds every agent of every page with its assigned number, reporting progress on stderr', async () => {
    const run = await runCli(env, ['agents', 'sync', '--account', accountId]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, 'listed 2 agents (page 1)…\nlisted 4 agents (page 2)…\n');
    assert.match(run.stdout, new RegExp(`^Synced account ${accountId} with ElevenLabs: 3 added, 0 updated, 1 skipped\\.\\n`));
    assert.match(run.stdout, /agent_alpha +Alpha +phnum_a +twilio/);
    assert.match(run.stdout, /Skipped:\n  legacy-7: agent ids look like agent_/);
    assert.deepEqual(fake.requests, [
      { path: 'GET /v1/convai/agents?page_size=100', apiKey },
      { path: 'GET /v1/convai/agents?page_size=100&cursor=cur_2', apiKey },
      { path: 'GET /v1/convai/phone-numbers', apiKey },
    ]);

    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    const byId = Object.fromEntries(listed.data.map((agent: Record<string, unknown>) => [agent.agent_id, agent]));
    assert.deepEqual(Object.keys(byId).sort(), ['agent_alpha', 'agent_beta', 'agent_gamma']);
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
    assert.deepEqual(skipped.map((entry) => entry.agent_id), ['legacy-7']);
    assert.match(skipped[0]?.reason ?? '', /agent ids look like agent_/);
    assert.deepEqual(result.agents.map((agent: { agent_id: string }) => agent.agent_id), ['agent_alpha', 'agent_beta', 'agent_gamma']);
    assert.equal(result.agents[0].account_id, accountId);
  });

  it('a refusal by ElevenLabs fails the command with the reason and changes nothing', async () => {
    fake.failWith = 401;
    try {
      await runFailing(env, ['agents', 'sync', '--account', accountId], 1, /^callgate: could not list agents: .+/);
    } finally {
      fake.failWith = undefined;
    }
    const listed = await runJson(env, ['agents', 'list', '--account', accountId]);
    assert.equal(listed.data.length, 3);
  });
});
