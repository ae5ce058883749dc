/**
 * The mode said plainly where it happens: a live key on a simulator agent places simulated calls that count
 * as live, and the API keys page and the call's page say so; a test key's call, a live call of a real
 * provider and an account of real agents only are not told that.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient, type PortalClient } from '../support/portal-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

/** The text of the element with `id`, tags dropped and entities read. */
function textOf(page: string, id: string): string {
  const match = new RegExp(`<(\\w+)[^>]* id="${id}"[^>]*>([\\s\\S]*?)</\\1>`).exec(page);
  assert.ok(match, `no element #${id} on the page`);
  return match[2]!
    .replace(/<[^>]+>/g, '')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

const simulatedLive = "live: simulated (the agent's provider is the simulator), counted as live";

await forEachDialect('Portal: the mode said plainly', (dialect) => {
  let t: TestApp;
  let client: PortalClient;

  before(async () => {
    t = await startTestApp(dialect);
    client = await signedInClient(t);
  });
  after(async () => t.close());

  it("says on a live call placed through the simulator that it was simulated, counted as live; not on a real provider's", async () => {
    // The seed account: a live key, and its one agent is the simulator.
    const created = await t.createCall(callBody(t));
    assert.equal(created.statusCode, 201);
    const id = created.json().id as string;
    const page = await client.get(`/developers/calls/${id}`);
    assert.equal(page.statusCode, 200);
    const mode = textOf(page.body, 'call-mode');
    assert.ok(mode.startsWith(simulatedLive), mode);
    assert.match(mode, /"livemode": true/);
    assert.match(mode, /nobody was phoned/);
    assert.match(page.body, /badge-live">live<\/span> <span class="badge badge-neutral">simulated<\/span>/, 'marked at the top too');

    // The same call as a real provider would have placed it.
    await t.services.db.updateTable('calls').set({ provider: 'retell' }).where('id', '=', id).execute();
    const real = await client.get(`/developers/calls/${id}`);
    assert.equal(textOf(real.body, 'call-mode'), 'live (a live key: a real call through retell)');
    assert.ok(!real.body.includes('counted as live'));
  });

  it('says on a test call only that a test key simulated it', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_mode_test' });
    const created = await t.createCall({ agent_id: 'agent_mode_test', to: '+14155550123' }, { token: account.token });
    assert.equal(created.statusCode, 201);
    const testClient = await signedInClient(t, account);
    const page = await testClient.get(`/developers/calls/${created.json().id}`);
    assert.equal(textOf(page.body, 'call-mode'), 'test (a test-mode key: simulated)');
    assert.ok(!page.body.includes('counted as live'));
    const keys = await testClient.get('/developers/api-keys');
    assert.ok(!keys.body.includes('live-on-simulator'), 'no live key: nothing to say of live calls');
  });

  it("says on the API keys page that a live key's calls on the simulator agents are simulated, counted as live", async () => {
    const keys = await client.get('/developers/api-keys');
    assert.equal(keys.statusCode, 200);
    const row = /<tr>(?:(?!<\/tr>)[\s\S])*cg_live_(?:(?!<\/tr>)[\s\S])*<\/tr>/.exec(keys.body)?.[0] ?? '';
    assert.match(row, /badge-live">live<\/span> <span class="muted small">calls simulated \(simulator agents\), counted as live<\/span>/);
    assert.match(
      textOf(keys.body, 'live-on-simulator'),
      /^Your account's agents are the simulator: a live key's calls are simulated \(nobody is phoned\) but counted as live: "livemode": true, /,
    );
    assert.match(
      keys.body,
      /<strong>Live<\/strong>: live calls through each agent(?:'|&#39;)s voice provider; your agents are the simulator, so they are simulated/,
    );

    // With an agent of a real provider beside it, only the simulator agent's calls are simulated.
    await upsertAgent(t.services.db, t.services.clock, {
      accountId: t.seed.accountId,
      agentId: 'agent_mode_retell',
      name: 'Real bot',
      provider: 'retell',
      providerAgentId: 'agent_0123456789abcdef',
    });
    const mixed = await client.get('/developers/api-keys');
    assert.match(
      textOf(mixed.body, 'live-on-simulator'),
      new RegExp(`^A live key's calls to the simulator agent ${t.seed.agentId} are simulated \\(nobody is phoned\\) but counted as live`),
    );
    assert.ok(!mixed.body.includes('calls simulated (simulator agents)'), 'the key itself places real calls too');
  });

  it('says nothing of the simulator to an account whose agents are all real', async () => {
    const account = await t.newAccount({ mode: 'live', agentId: 'agent_mode_real' });
    await t.services.db.updateTable('agents').set({ provider: 'vapi' }).where('account_id', '=', account.accountId).execute();
    const realClient = await signedInClient(t, account);
    const keys = await realClient.get('/developers/api-keys');
    assert.ok(!keys.body.includes('counted as live'), 'no simulator agent');
    assert.match(keys.body, /<strong>Live<\/strong>: real calls through your voice provider/);
  });
});
