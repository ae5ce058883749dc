/**
 * The TypeScript client's agents and call filters, against the real server on SQLite and PostgreSQL: agents
 * listed across pages and retrieved, another account's agent not found, and calls.list's typed filters.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { upsertAgent } from '../../../src/features/agents/agents.service.js';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { Callgate, NotFoundError, type Agent, type ListCallsParams } from '../src/index.js';

await forEachDialect('TypeScript client: agents and call filters', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  before(async () => {
    t = await startTestApp(dialect);
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('agents.list walks every page, listPage answers one, retrieve one; another account sees none of them', async () => {
    const account = await t.newAccount({ agentId: 'agent_client_first' });
    const { db, clock } = t.services;
    await upsertAgent(db, clock, {
      accountId: account.accountId,
      agentId: 'agent_client_retell',
      name: 'Retell bot',
      provider: 'retell',
      providerAgentId: 'retell_agent_42',
    });
    await upsertAgent(db, clock, { accountId: account.accountId, agentId: 'agent_client_third', name: 'Third', provider: 'simulator' });
    const callgate = new Callgate({ apiKey: account.token, baseUrl });

    const all: Agent[] = [];
    for await (const agent of callgate.agents.list({ limit: 1 })) all.push(agent);
    assert.deepEqual(all.map((agent) => agent.id).sort(), ['agent_client_first', 'agent_client_retell', 'agent_client_third']);
    const page = await callgate.agents.listPage({ limit: 2 });
    assert.equal(page.data.length, 2);
    assert.equal(page.has_more, true);
    assert.equal(page.lastResponse.status, 200);

    const retell = await callgate.agents.retrieve('agent_client_retell');
    assert.deepEqual(
      { ...retell },
      {
        id: 'agent_client_retell',
        name: 'Retell bot',
        provider: 'retell',
        provider_agent_id: 'retell_agent_42',
        created_at: retell.created_at,
      },
    );

    const other = await t.newAccount({ agentId: 'agent_client_other' });
    const stranger = new Callgate({ apiKey: other.token, baseUrl });
    await assert.rejects(stranger.agents.retrieve('agent_client_retell'), (error: unknown) => {
      assert.ok(error instanceof NotFoundError);
      assert.equal(error.code, 'not_found');
      return true;
    });
    const theirs: string[] = [];
    for await (const agent of stranger.agents.list()) theirs.push(agent.id);
    assert.deepEqual(theirs, ['agent_client_other']);
  });

  it('calls.list takes the filters, typed, and sends the + of a number encoded', async () => {
    const account = await t.newAccount({ agentId: 'agent_client_filters' });
    const callgate = new Callgate({ apiKey: account.token, baseUrl });
    const first = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550301' });
    const second = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550302' });
    const idsOf = async (params: ListCallsParams) => {
      const ids: string[] = [];
      for await (const call of callgate.calls.list(params)) ids.push(call.id);
      return ids;
    };
    assert.deepEqual(await idsOf({ to: '+14155550302' }), [second.id]);
    assert.deepEqual(await idsOf({ to: '+14155550301', created_before: new Date(Date.now() + 60_000).toISOString() }), [first.id]);
    assert.deepEqual(await idsOf({ created_after: second.created_at }), []);
    assert.deepEqual(await idsOf({ batch_id: 'batch_none' }), []);
    const refused = await callgate.calls.listPage({ to: '4155550301' }).catch((error: unknown) => error);
    assert.ok(refused instanceof Error && 'param' in refused, String(refused));
    assert.equal((refused as { param?: string }).param, 'to');
  });
});
