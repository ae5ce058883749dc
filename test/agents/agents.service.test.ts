/**
 * Agents on SQLite and PostgreSQL, below the CLI and the API: each account sees only its own, the same
 * agent id in two accounts is two agents, adding an id again updates it, and what cannot be an agent here
 * is refused before anything is stored.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { agentPolicyFor, findAgent, listAgents, upsertAgent, type AgentInput } from '../../src/features/agents/agents.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';

await forEachDialect('Agents', (dialect) => {
  let t: TestApp;
  let ours: SeededAccount;
  let theirs: SeededAccount;

  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());
  beforeEach(async () => {
    ours = await t.newAccount({ agentId: 'agent_ours' });
    theirs = await t.newAccount({ agentId: 'agent_theirs' });
  });

  const upsert = (input: AgentInput) => upsertAgent(t.services.db, t.services.clock, input);
  const agentIds = async (account: SeededAccount) => (await listAgents(t.services.db, account.accountId)).map((agent) => agent.agent_id);

  it('adds agents to one account only: another account neither lists nor finds them', async () => {
    const { agent, created } = await upsert({
      accountId: ours.accountId,
      agentId: 'agent_support',
      name: 'Support line',
      provider: 'simulator',
    });
    assert.equal(created, true);
    assert.equal(agent.account_id, ours.accountId);
    assert.deepEqual(await agentIds(ours), ['agent_ours', 'agent_support']);
    assert.deepEqual(await agentIds(theirs), ['agent_theirs']);
    assert.equal((await findAgent(t.services.db, ours.accountId, 'agent_support'))?.id, agent.id);
    assert.equal(await findAgent(t.services.db, theirs.accountId, 'agent_support'), undefined);
    assert.equal(await findAgent(t.services.db, ours.accountId, 'agent_theirs'), undefined);
  });

  it('the same agent id in two accounts is two agents; changing one leaves the other', async () => {
    const mine = await upsert({ accountId: ours.accountId, agentId: 'agent_shared', name: 'Mine', provider: 'simulator' });
    const yours = await upsert({ accountId: theirs.accountId, agentId: 'agent_shared', name: 'Yours', provider: 'simulator' });
    assert.notEqual(mine.agent.id, yours.agent.id);
    await upsert({ accountId: ours.accountId, agentId: 'agent_shared', name: 'Mine, renamed', provider: 'simulator' });
    assert.equal((await findAgent(t.services.db, ours.accountId, 'agent_shared'))?.name, 'Mine, renamed');
    assert.equal((await findAgent(t.services.db, theirs.accountId, 'agent_shared'))?.name, 'Yours');
  });

  it('adding an id again updates that agent: its number is kept for the same number id and dropped with another', async () => {
    const input = {
      accountId: ours.accountId,
      agentId: 'agent_dialer',
      name: 'Dialer',
      provider: 'elevenlabs',
      phoneNumberId: 'phnum_1',
    } as const;
    const first = await upsert({ ...input, phoneNumber: '+14155550100', phoneNumberProvider: 'twilio' });
    const again = await upsert({ ...input, name: 'Dialer 2' });
    assert.equal(again.created, false);
    assert.equal(again.agent.id, first.agent.id);
    assert.deepEqual(await agentIds(ours), ['agent_dialer', 'agent_ours']);
    const kept = await findAgent(t.services.db, ours.accountId, 'agent_dialer');
    assert.deepEqual([kept?.name, kept?.phone_number_id, kept?.phone_number], ['Dialer 2', 'phnum_1', '+14155550100']);

    await upsert({ ...input, phoneNumberId: 'phnum_2' });
    const moved = await findAgent(t.services.db, ours.accountId, 'agent_dialer');
    assert.deepEqual([moved?.phone_number_id, moved?.phone_number, moved?.phone_number_provider], ['phnum_2', null, null]);
  });

  it('refuses an id not shaped agent_…, and a provider this server is not set up for, storing nothing', async () => {
    await assert.rejects(
      upsert({ accountId: ours.accountId, agentId: 'support bot', name: 'x', provider: 'simulator' }),
      /agent ids look like agent_/,
    );
    const noElevenLabs = agentPolicyFor(loadConfig({}));
    await assert.rejects(
      upsertAgent(
        t.services.db,
        t.services.clock,
        { accountId: ours.accountId, agentId: 'agent_el', name: 'x', provider: 'elevenlabs' },
        noElevenLabs,
      ),
      /ELEVENLABS_API_KEY/,
    );
    assert.deepEqual(await agentIds(ours), ['agent_ours']);
  });
});
