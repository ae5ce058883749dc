/**
 * The Agents page's sync for Retell and Vapi, over HTTP as a signed-in user sends it, against the fakes of
 * both: one form per provider whose key the server has, behind the CSRF check; the agents land in the
 * user's account with their provider, the provider's own id and its number. A provider without its key
 * is refused saying which setting is missing, and one account's user neither sees another's synced agents
 * nor syncs into that account.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { syncedAgentId } from '../../src/features/agents/agents-sync.service.js';
import { listAgents } from '../../src/features/agents/agents.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import { csrfOf, portalClient, signedInClient, type PortalClient } from '../support/portal-client.js';
import {
  fillRetellPages,
  fillWorkspaces,
  retellAgentId,
  retellKey,
  retellNumber,
  retellPagedExpected,
  retellVapiEnv,
  vapiAssistantId,
  vapiKey,
  vapiNumberId,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';

const retellAgent = syncedAgentId('retell', retellAgentId);
const vapiAgent = syncedAgentId('vapi', vapiAssistantId);

/** The Agents page's sync form of one provider, with the session's CSRF token. */
const syncForm = (provider: string) =>
  new RegExp(
    '<form method="post" action="/developers/agents/sync"[^>]*>' +
      `<input type="hidden" name="_csrf" value="[^"]+"><input type="hidden" name="provider" value="${provider}">`,
  );

await forEachDialect('Portal: agent sync from Retell and Vapi', (dialect) => {
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let t: TestApp;
  let client: PortalClient;
  let other: SeededAccount;
  let otherClient: PortalClient;
  let retellOnly: TestApp;
  let retellOnlyClient: PortalClient;

  before(async () => {
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    fillWorkspaces(undefined, vapi);
    fillRetellPages(retell);
    t = await startTestApp(dialect, { env: retellVapiEnv(retell, vapi) });
    client = await signedInClient(t);
    other = await t.newAccount();
    otherClient = await signedInClient(t, other);
    retellOnly = await startTestApp(dialect, { env: retellVapiEnv(retell, undefined) });
    retellOnlyClient = await signedInClient(retellOnly);
  });
  after(async () => {
    await t?.close();
    await retellOnly?.close();
    await retell?.close();
    await vapi?.close();
  });

  const agentsOf = async (app: TestApp, accountId: string) => listAgents(app.services.db, accountId);

  it('offers a sync form per configured provider; a forged form reaches neither provider', async () => {
    const page = await client.get('/developers/agents');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, syncForm('retell'));
    assert.match(page.body, syncForm('vapi'));
    assert.match(page.body, />Sync from Retell</);
    assert.match(page.body, />Sync from Vapi</);
    assert.doesNotMatch(page.body, /Sync from ElevenLabs/, 'the server has no ELEVENLABS_API_KEY');

    for (const provider of ['retell', 'vapi']) {
      const forged = await client.post('/developers/agents/sync', { provider }, { csrf: 'forged' });
      assert.equal(forged.statusCode, 403, provider);
      const unsigned = await client.post('/developers/agents/sync', { provider }, { csrf: null });
      assert.equal(unsigned.statusCode, 403, provider);
    }
    assert.deepEqual([retell.requests.length, vapi.requests.length], [0, 0]);
  });

  it('syncing Retell adds every agent of its three pages with provider retell, its Retell id and its number; again, it updates', async () => {
    retell.resetRequests();
    const page = await client.get('/developers/agents');
    const synced = await client.post('/developers/agents/sync', { provider: 'retell', _csrf: csrfOf(page.body) });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.match(synced.body, /Synced with Retell: 5 added, 0 updated\./);
    assert.match(synced.body, new RegExp(retellAgent));
    assert.match(synced.body, new RegExp(`retell<br><code class="small" title="Retell's id of the agent">${retellAgentId}</code>`));
    assert.deepEqual(
      retell.requests.map((request) => [`${request.method} ${request.path}`, request.headers.authorization]),
      [
        ...Array(3).fill(['POST /v2/list-agents', `Bearer ${retellKey}`]),
        ...Array(3).fill(['GET /v2/list-phone-numbers', `Bearer ${retellKey}`]),
      ],
      'every page of agents, then every page of numbers, with the key, and nothing else',
    );
    assert.ok(retell.requestsTo('agents').every((request) => JSON.stringify(request.body).includes('"value":"voice"')));
    const retellAgents = (await agentsOf(t, t.seed.accountId)).filter((candidate) => candidate.provider === 'retell');
    assert.deepEqual(
      retellAgents.map((candidate) => [candidate.provider_agent_id, candidate.name, candidate.phone_number]).sort(),
      retellPagedExpected.map((row) => [...row]).sort(),
    );

    const agent = (await agentsOf(t, t.seed.accountId)).find((candidate) => candidate.agent_id === retellAgent);
    assert.deepEqual(
      [agent?.provider, agent?.provider_agent_id, agent?.name, agent?.phone_number_id, agent?.phone_number],
      ['retell', retellAgentId, 'Retell reminders', retellNumber, retellNumber],
    );

    const again = await client.post('/developers/agents/sync', { provider: 'retell' });
    assert.equal(again.statusCode, 200);
    assert.match(again.body, /Synced with Retell: 0 added, 5 updated\./);
    assert.equal((await agentsOf(t, t.seed.accountId)).filter((candidate) => candidate.provider === 'retell').length, 5);
  });

  it('syncing Vapi adds its assistant with provider vapi, its assistant id and its phone number', async () => {
    vapi.resetRequests();
    const synced = await client.post('/developers/agents/sync', { provider: 'vapi' });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.match(synced.body, /Synced with Vapi: 1 added, 0 updated\./);
    assert.match(synced.body, new RegExp(`vapi<br><code class="small" title="Vapi's id of the agent">${vapiAssistantId}</code>`));
    assert.deepEqual(
      vapi.requests.map((request) => request.route),
      ['assistants', 'assistants', 'phoneNumbers'],
    );
    assert.ok(vapi.requests.every((request) => request.headers.authorization === `Bearer ${vapiKey}`));

    const agent = (await agentsOf(t, t.seed.accountId)).find((candidate) => candidate.agent_id === vapiAgent);
    assert.deepEqual(
      [agent?.provider, agent?.provider_agent_id, agent?.name, agent?.phone_number_id, agent?.phone_number],
      ['vapi', vapiAssistantId, 'Vapi reminders', vapiNumberId, '+14155550191'],
    );
    const page = await client.get('/developers/agents');
    for (const id of [retellAgent, vapiAgent]) assert.match(page.body, new RegExp(id));
  });

  it('a provider the server has no key for is refused naming the setting, and an unknown one too', async () => {
    const page = await retellOnlyClient.get('/developers/agents');
    assert.match(page.body, />Sync from Retell</);
    assert.doesNotMatch(page.body, /Sync from Vapi/);
    assert.doesNotMatch(page.body, syncForm('vapi'));

    const unchanged = await agentsOf(retellOnly, retellOnly.seed.accountId);
    const refused = await retellOnlyClient.post('/developers/agents/sync', { provider: 'vapi' });
    assert.equal(refused.statusCode, 409);
    assert.match(
      refused.body,
      /This server has no VAPI_API_KEY, so it cannot sync agents from Vapi\. Ask your callgate operator to set it\./,
    );
    const unknown = await retellOnlyClient.post('/developers/agents/sync', { provider: 'bland' });
    assert.equal(unknown.statusCode, 400);
    assert.match(unknown.body, /There is no provider &quot;bland&quot; to sync with\./);
    assert.deepEqual(await agentsOf(retellOnly, retellOnly.seed.accountId), unchanged, 'nothing was written');
  });

  it("another account's user sees none of these agents, and its sync writes only to its own account", async () => {
    const mine = await agentsOf(t, t.seed.accountId);
    assert.ok(mine.some((agent) => agent.agent_id === retellAgent) && mine.some((agent) => agent.agent_id === vapiAgent));

    const page = await otherClient.get('/developers/agents');
    assert.equal(page.statusCode, 200);
    for (const id of [retellAgent, vapiAgent, retellAgentId, vapiAssistantId]) assert.doesNotMatch(page.body, new RegExp(id));

    // Without a session, or with the first user's token in the other's session: refused before any provider is asked.
    retell.resetRequests();
    const signedOut = await portalClient(t).post('/developers/agents/sync', { provider: 'retell' }, { csrf: 'none' });
    assert.deepEqual([signedOut.statusCode, signedOut.headers.location], [303, '/developers/sign-in']);
    const borrowed = await otherClient.post('/developers/agents/sync', { provider: 'retell', _csrf: await client.csrf() });
    assert.equal(borrowed.statusCode, 403);
    assert.equal(retell.requests.length, 0);

    // A field naming the first account is no way into it: the session's account is the one synced.
    const synced = await otherClient.post('/developers/agents/sync', { provider: 'retell', account_id: t.seed.accountId });
    assert.equal(synced.statusCode, 200, synced.body);
    assert.match(synced.body, /Synced with Retell: 5 added, 0 updated\./);
    assert.deepEqual(await agentsOf(t, t.seed.accountId), mine, "the first account's agents are as they were");
    const theirs = await agentsOf(t, other.accountId);
    assert.deepEqual(
      theirs
        .filter((agent) => agent.provider === 'retell')
        .map((agent) => [agent.agent_id, agent.provider_agent_id])
        .sort(),
      retellPagedExpected.map(([id]) => [syncedAgentId('retell', id), id]).sort(),
    );
    assert.ok(!theirs.some((agent) => agent.provider === 'vapi'), 'Vapi was not synced for this account');
  });
});
