/**
 * How agent sync reads the Retell and Vapi workspaces, through the service on each database against the
 * fakes. Retell's `GET /list-agents` lists one entry per agent version unless `is_latest=true` and pages
 * after an (agent id, version) pair: each agent comes once, named by its newest version, however the
 * versions fall across pages. Vapi's `GET /assistant` pages by `createdAtLt`, an ISO date-time as the
 * assistants' `createdAt` are.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { syncAgents } from '../../src/features/agents/agents-sync.service.js';
import { listAgents } from '../../src/features/agents/agents.service.js';
import type { AgentDirectory } from '../../src/features/providers/provider.interface.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import { fillWorkspaces, retellKey, retellVapiEnv, vapiKey, vapiSecret } from '../support/retell-vapi-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const agentA = 'agent_a1a1a1a1a1a1';
const agentB = 'agent_b2b2b2b2b2b2';

/** Agent A edited three times (its name changed at the last), then agent B: five versions in all. */
const versions = [
  { agent_id: agentA, agent_name: 'Reminders draft', version: 0 },
  { agent_id: agentA, agent_name: 'Reminders draft', version: 1 },
  { agent_id: agentA, agent_name: 'Reminders draft', version: 2 },
  { agent_id: agentA, agent_name: 'Reminders', version: 3 },
  { agent_id: agentB, agent_name: 'Follow-ups', version: 0 },
];

await forEachDialect('Agent sync: how the Retell and Vapi workspaces are read', (dialect) => {
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let t: TestApp;
  let accountId: string;

  before(async () => {
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    t = await startTestApp(dialect, { env: retellVapiEnv(retell, vapi) });
  });
  after(async () => {
    await t?.close();
    await retell?.close();
    await vapi?.close();
  });
  beforeEach(async () => {
    retell.reset();
    vapi.reset();
    fillWorkspaces(retell, vapi);
    retell.agents = structuredClone(versions);
    retell.agentsPageSize = 2;
    retell.everyVersion = false;
    accountId = (await t.newAccount()).accountId;
  });

  const directory = (provider: 'retell' | 'vapi'): AgentDirectory => {
    const found = t.services.agentDirectories.get(provider);
    assert.ok(found, `${provider} is configured`);
    return found;
  };
  const namesOf = async (provider: 'retell' | 'vapi') =>
    (await listAgents(t.services.db, accountId))
      .filter((agent) => agent.provider === provider)
      .map((agent) => [agent.provider_agent_id, agent.name]); // in the order of names, as listAgents gives them

  it('Retell: asks for the latest version of each agent and pages after the (id, version) of the last one', async () => {
    const result = await syncAgents(t.services.db, t.services.clock, directory('retell'), accountId);
    assert.deepEqual([result.added, result.updated, result.skipped], [2, 0, []]);
    assert.deepEqual(await namesOf('retell'), [
      [agentB, 'Follow-ups'],
      [agentA, 'Reminders'],
    ]);
    const pages = retell.requestsTo('agents').map((request) => Object.fromEntries(request.query));
    assert.deepEqual(pages, [
      { limit: '1000', is_latest: 'true' },
      { limit: '1000', is_latest: 'true', pagination_key: agentB, pagination_key_version: '0' },
    ]);
  });

  it('Retell: should every version come anyway, the newest names the agent and a page of known agents does not end the list', async () => {
    retell.everyVersion = true;
    const progress: { agentsListed: number; page: number }[] = [];
    const result = await syncAgents(t.services.db, t.services.clock, directory('retell'), accountId, (p) => progress.push(p));
    assert.equal(result.added, 2);
    assert.deepEqual(await namesOf('retell'), [
      [agentB, 'Follow-ups'],
      [agentA, 'Reminders'],
    ]);
    // Page 2 holds only versions of agent A, which page 1 brought already: the list goes on to agent B.
    assert.deepEqual(progress, [
      { agentsListed: 1, page: 1 },
      { agentsListed: 1, page: 2 },
      { agentsListed: 2, page: 3 },
      { agentsListed: 2, page: 4 },
    ]);
    assert.deepEqual(
      retell.requestsTo('agents').map((request) => [request.query.get('pagination_key'), request.query.get('pagination_key_version')]),
      [
        [null, null],
        [agentA, '1'],
        [agentA, '3'],
        [agentB, '0'],
      ],
    );
  });

  it("Vapi: pages the assistants by createdAtLt, the oldest listed assistant's ISO createdAt", async () => {
    vapi.assistants.push({ id: '0b6c8f2a-1111-4222-8333-944455566677', name: 'Older', createdAt: '2026-04-01T08:30:00.000Z' });
    const result = await syncAgents(t.services.db, t.services.clock, directory('vapi'), accountId);
    assert.equal(result.added, 2);
    const asked = vapi.requestsTo('assistants').map((request) => request.query.get('createdAtLt'));
    assert.deepEqual(asked, [null, '2026-04-01T08:30:00.000Z']);
    assert.equal(new Date(asked[1]!).toISOString(), asked[1], 'an ISO 8601 date-time, as Vapi takes it');
  });
});
