/**
 * Agent sync through the service (syncAgents with the ElevenLabs directory) against the fake ElevenLabs: the agent list is
 * followed over its cursors, phone numbers are matched to their agents with their kind, re-running
 * updates rather than duplicates, a bad cursor never loops, and a failing page gives a clear error.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import type { Db } from '../../src/db/database.js';
import { ApiError } from '../../src/errors/api-error.js';
import { syncAgents, type SyncProgress } from '../../src/features/agents/agents-sync.service.js';
import { listAgents, upsertAgent } from '../../src/features/agents/agents.service.js';
import { elevenlabsEntry } from '../../src/features/providers/elevenlabs/elevenlabs.entry.js';
import type { ProviderHttpClient as ElevenLabsClient } from '../../src/features/providers/provider-http.js';
import type { Clock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs, type FakePhoneNumber } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { apiKey, providerInternals, workspaceAgents, workspaceNumber } from '../support/elevenlabs-fixtures.js';

/** The sync as the CLI and the portal run it: through the ElevenLabs workspace's directory. */
const syncElevenLabsAgents = (
  db: Db,
  clock: Clock,
  client: ElevenLabsClient,
  accountId: string,
  onProgress?: (progress: SyncProgress) => void,
) => syncAgents(db, clock, elevenlabsEntry.createDirectory(client), accountId, onProgress);

const remoteAgents = workspaceAgents(7);
const remote = (n: number) => remoteAgents[n - 1]!;

const numbers = (): FakePhoneNumber[] => [
  workspaceNumber('twilio', 'phnum_tw', '+14155550100', 'Main', remote(1)),
  workspaceNumber('sip_trunk', 'phnum_sip', '+493012345670', 'PBX', remote(5)),
  workspaceNumber('twilio', 'phnum_free', '+14155550101', 'Spare'),
  workspaceNumber('sip_trunk', 'phnum_ghost', '+493012345679', 'Other', { agent_id: 'agent_not_listed', name: 'Gone' }),
];

await forEachDialect('ElevenLabs agent sync', (dialect) => {
  let fake: FakeElevenLabs;
  let t: TestApp;
  let client: ElevenLabsClient;
  let accountId: string;

  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    t = await startTestApp(dialect);
    client = elevenlabsEntry.createClient({ apiKey, baseUrl: fake.url }, 5_000);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });
  beforeEach(async () => {
    fake.reset();
    fake.agents = structuredClone(remoteAgents);
    fake.agentsPageSize = 3;
    fake.phoneNumbers = numbers();
    accountId = (await t.newAccount()).accountId;
  });

  const remoteOf = async (account = accountId) =>
    (await listAgents(t.services.db, account)).filter((agent) => agent.provider === 'elevenlabs');

  it('follows the cursors over 3 pages and gives each agent its assigned number and its kind', async () => {
    const progress: SyncProgress[] = [];
    const result = await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId, (p) => progress.push(p));
    assert.equal(result.added, 7);
    assert.equal(result.updated, 0);
    assert.deepEqual(result.skipped, []);
    assert.deepEqual(progress, [
      { agentsListed: 3, page: 1 },
      { agentsListed: 6, page: 2 },
      { agentsListed: 7, page: 3 },
    ]);

    const pages = fake.requestsTo('agents');
    assert.deepEqual(
      pages.map((request) => request.query.get('cursor')),
      [null, 'cursor_3', 'cursor_6'],
    );
    assert.ok(pages.every((request) => request.method === 'GET' && request.query.get('page_size') === '100'));
    assert.equal(fake.requestsTo('phoneNumbers').length, 1);
    assert.ok(fake.requests.every((request) => request.headers['xi-api-key'] === apiKey));

    const stored = await remoteOf();
    assert.deepEqual(stored.map((agent) => agent.agent_id).sort(), remoteAgents.map((agent) => agent.agent_id).sort());
    const byId = new Map(stored.map((agent) => [agent.agent_id, agent]));
    assert.deepEqual(
      [byId.get('agent_remote_1')!.phone_number_id, byId.get('agent_remote_1')!.phone_number_provider],
      ['phnum_tw', 'twilio'],
    );
    assert.deepEqual(
      [byId.get('agent_remote_5')!.phone_number_id, byId.get('agent_remote_5')!.phone_number_provider],
      ['phnum_sip', 'sip_trunk'],
    );
    // The number itself, as the workspace gives it, for people to recognise.
    assert.equal(byId.get('agent_remote_1')!.phone_number, '+14155550100');
    assert.equal(byId.get('agent_remote_5')!.phone_number, '+493012345670');
    assert.equal(byId.get('agent_remote_3')!.name, 'Remote 3');
    for (const id of ['agent_remote_2', 'agent_remote_3', 'agent_remote_4', 'agent_remote_6', 'agent_remote_7']) {
      assert.equal(byId.get(id)!.phone_number_id, null, id);
      assert.equal(byId.get(id)!.phone_number_provider, null, id);
      assert.equal(byId.get(id)!.phone_number, null, id);
    }
  });

  it('running it again updates the agents (names, moved numbers) instead of adding them twice', async () => {
    await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    const before = await remoteOf();
    fake.agents[1]!.name = 'Renamed 2';
    fake.agents.push({ agent_id: 'agent_remote_8', name: 'Remote 8' });
    // The Twilio number moves from agent 1 to agent 2.
    fake.phoneNumbers[0]!.assigned_agent = { agent_id: 'agent_remote_2', agent_name: 'Renamed 2' };

    const result = await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    assert.equal(result.added, 1);
    assert.equal(result.updated, 7);
    const after = await remoteOf();
    assert.equal(after.length, 8);
    const byId = new Map(after.map((agent) => [agent.agent_id, agent]));
    assert.equal(byId.get('agent_remote_2')!.name, 'Renamed 2');
    assert.deepEqual(
      [byId.get('agent_remote_2')!.phone_number_id, byId.get('agent_remote_2')!.phone_number_provider],
      ['phnum_tw', 'twilio'],
    );
    assert.equal(byId.get('agent_remote_1')!.phone_number_id, null);
    // Same rows (same internal ids), not new ones.
    for (const agent of before) assert.equal(byId.get(agent.agent_id)!.id, agent.id);

    const other = (await t.newAccount()).accountId;
    await syncElevenLabsAgents(t.services.db, t.services.clock, client, other);
    assert.equal((await remoteOf(other)).length, 8, 'each account gets its own copy');
    assert.equal((await remoteOf()).length, 8);
  });

  it('a free number set by hand survives a sync (with its kind filled in) until the workspace assigns it elsewhere', async () => {
    await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    const byHand = (agentId: string, phoneNumberId: string) =>
      upsertAgent(t.services.db, t.services.clock, { accountId, agentId, name: agentId, provider: 'elevenlabs', phoneNumberId });
    await byHand('agent_remote_3', 'phnum_free');
    await byHand('agent_remote_4', 'phnum_deleted_in_workspace');
    await byHand('agent_remote_7', 'phnum_ghost');

    await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    let byId = new Map((await remoteOf()).map((agent) => [agent.agent_id, agent]));
    assert.deepEqual(
      [byId.get('agent_remote_3')!.phone_number_id, byId.get('agent_remote_3')!.phone_number_provider],
      ['phnum_free', 'twilio'],
    );
    assert.equal(byId.get('agent_remote_3')!.phone_number, '+14155550101', 'and its number filled in');
    // Set again by hand with the same id, the agent keeps the number the workspace gave; another id drops it.
    await byHand('agent_remote_3', 'phnum_free');
    assert.equal((await remoteOf()).find((agent) => agent.agent_id === 'agent_remote_3')!.phone_number, '+14155550101');
    await byHand('agent_remote_3', 'phnum_other');
    assert.equal((await remoteOf()).find((agent) => agent.agent_id === 'agent_remote_3')!.phone_number, null);
    await byHand('agent_remote_3', 'phnum_free');
    assert.equal(byId.get('agent_remote_4')!.phone_number_id, null, 'a number the workspace no longer has is dropped');
    assert.equal(byId.get('agent_remote_7')!.phone_number_id, null, 'a number assigned to another agent is dropped');
    assert.deepEqual([byId.get('agent_remote_1')!.phone_number_id, byId.get('agent_remote_5')!.phone_number_id], ['phnum_tw', 'phnum_sip']);

    fake.phoneNumbers[2]!.assigned_agent = { agent_id: 'agent_remote_6', agent_name: 'Remote 6' };
    await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    byId = new Map((await remoteOf()).map((agent) => [agent.agent_id, agent]));
    assert.equal(byId.get('agent_remote_3')!.phone_number_id, null);
    assert.equal(byId.get('agent_remote_6')!.phone_number_id, 'phnum_free');
  });

  it('an agent id that cannot be used here is skipped with its reason', async () => {
    fake.agents = [
      { agent_id: 'agent_ok_1', name: 'Fine' },
      { agent_id: 'not an agent id', name: 'Odd' },
    ];
    const result = await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    assert.equal(result.added, 1);
    assert.equal(result.skipped.length, 1);
    assert.equal(result.skipped[0]!.agent_id, 'not an agent id');
    assert.match(result.skipped[0]!.reason, /agent_/);
  });

  it('a cursor that comes back, or has_more without a cursor, ends the listing instead of looping', async () => {
    const page = (ids: string[], next: string | null) => ({
      status: 200,
      body: { agents: ids.map((id) => ({ agent_id: id, name: id })), next_cursor: next, has_more: true },
    });
    fake.queue('agents', page(['agent_loop_1'], 'c1'), page(['agent_loop_2'], 'c2'), page(['agent_loop_3'], 'c1'));
    const looped = await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    assert.equal(fake.requestsTo('agents').length, 3);
    assert.deepEqual(
      looped.agents.map((agent) => agent.agent_id),
      ['agent_loop_1', 'agent_loop_2', 'agent_loop_3'],
    );

    fake.reset();
    fake.queue('agents', page(['agent_loop_4'], null));
    await syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId);
    assert.equal(fake.requestsTo('agents').length, 1);
  });

  // No time limit: a thousand pages take seconds, many more on a busy machine. Should the bound be lost, the
  // listing ends at the fake's last page and the sync succeeds, which fails the test instead of hanging it.
  it('a cursor that never ends stops with an error after a bounded number of pages', async () => {
    let served = 0;
    fake.respond = (request) =>
      request.route === 'agents'
        ? { status: 200, body: { agents: [], next_cursor: `endless_${++served}`, has_more: served < 5_000 } }
        : undefined;
    await assert.rejects(syncElevenLabsAgents(t.services.db, t.services.clock, client, accountId), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.match(error.message, /more than \d+ pages/);
      return true;
    });
    assert.ok(served >= 2 && served <= 1_000, `${served} pages were asked for`);
  });

  const failures: { name: string; arrange: (fake: FakeElevenLabs) => void; message: RegExp; timeoutMs?: number }[] = [
    {
      name: 'a 500 on page 2',
      arrange: (f) =>
        (f.respond = (request) =>
          request.route === 'agents' && request.query.has('cursor')
            ? { status: 500, body: { detail: { message: providerInternals } } }
            : undefined),
      message: /^could not list agents: ElevenLabs answered HTTP 500, a failure on its side; try again in a few minutes$/,
    },
    {
      name: 'a 401 on page 1',
      arrange: (f) => f.queue('agents', { status: 401, body: { detail: { status: 'invalid_api_key', message: providerInternals } } }),
      message: /^could not list agents: ElevenLabs refused the API key \(HTTP 401\); check ELEVENLABS_API_KEY$/,
    },
    {
      name: 'a page that is not an agent list',
      arrange: (f) => f.queue('agents', { status: 200, body: { items: [] } }),
      message: /^could not list agents: unexpected answer/,
    },
    {
      name: 'a page slower than the timeout',
      arrange: (f) => f.queue('agents', { status: 200, delayMs: 1_500, body: { agents: [] } }),
      message: /^could not list agents: ElevenLabs did not answer in time \(CALLGATE_PROVIDER_TIMEOUT_MS\)/,
      timeoutMs: 300,
    },
    {
      name: 'a failing phone-number list',
      arrange: (f) => f.queue('phoneNumbers', { status: 503, body: { detail: { message: providerInternals } } }),
      message: /^could not list phone numbers: ElevenLabs answered HTTP 503, a failure on its side; try again in a few minutes$/,
    },
    {
      name: 'a 429 on page 1',
      arrange: (f) => f.queue('agents', { status: 429, body: {} }),
      message: /^could not list agents: .*HTTP 429.*try again/,
    },
    {
      name: 'a phone-number list that is not an array',
      arrange: (f) => f.queue('phoneNumbers', { status: 200, body: { phone_numbers: [] } }),
      message: /^could not list phone numbers: unexpected answer from ElevenLabs$/,
    },
  ];
  for (const failure of failures) {
    it(`${failure.name} gives a clear error and writes nothing`, async () => {
      failure.arrange(fake);
      const using =
        failure.timeoutMs === undefined ? client : elevenlabsEntry.createClient({ apiKey, baseUrl: fake.url }, failure.timeoutMs);
      await assert.rejects(syncElevenLabsAgents(t.services.db, t.services.clock, using, accountId), (error: unknown) => {
        assert.ok(error instanceof ApiError, String(error));
        assert.match(error.message, failure.message);
        assert.ok(!error.message.includes(providerInternals) && !error.message.includes(apiKey), error.message);
        return true;
      });
      assert.deepEqual(await remoteOf(), []);
    });
  }
});
