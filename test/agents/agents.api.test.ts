/**
 * GET /v1/agents and GET /v1/agents/{id} on both databases: the account's agents in pages, one by id, never
 * another account's, never a provider credential; both modes' keys see them; counted and logged like any
 * API request.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';

const agentFields = ['created_at', 'id', 'name', 'provider', 'provider_agent_id'];

await forEachDialect('Agents API: GET /v1/agents and /v1/agents/{id}', (dialect) => {
  let t: TestApp;
  let account: SeededAccount;
  const made: string[] = [];
  before(async () => {
    t = await startTestApp(dialect);
    account = await t.newAccount({ agentId: 'agent_first' });
    made.push('agent_first');
    const { db, clock } = t.services;
    const add = async (input: Omit<Parameters<typeof upsertAgent>[2], 'accountId'>) => {
      await upsertAgent(db, clock, { accountId: account.accountId, ...input });
      made.push(input.agentId);
    };
    await add({ agentId: 'agent_eleven', name: 'ElevenLabs bot', provider: 'elevenlabs', phoneNumberId: 'phnum_secretish' });
    await add({
      agentId: 'agent_retell',
      name: 'Retell bot',
      provider: 'retell',
      providerAgentId: 'retell_agent_1',
      phoneNumberId: '+14155550100',
    });
    await add({ agentId: 'agent_vapi', name: 'Vapi bot', provider: 'vapi', providerAgentId: 'asst_9', phoneNumberId: 'vapi_phone_1' });
    await add({ agentId: 'agent_last', name: 'Last', provider: 'simulator' });
    // Each made a millisecond or more apart, or in the same one: the order is by creation time, then row id.
  });
  after(async () => t.close());

  const get = (url: string, token = account.token) => t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
  const ids = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((agent) => agent.id);

  it('lists the agents newest first with their public fields only, and pages with starting_after and has_more', async () => {
    const all = await get('/v1/agents');
    assert.equal(all.statusCode, 200);
    assert.equal(all.json().has_more, false);
    assert.deepEqual([...ids(all)].sort(), [...made].sort());
    for (const agent of all.json().data) assert.deepEqual(Object.keys(agent).sort(), agentFields);
    // Never a phone-number setting nor anything of the provider's credentials, whatever the agent has.
    assert.doesNotMatch(all.body, /phnum_secretish|vapi_phone_1|phone_number|account_id|agt_/);

    const byId = new Map(all.json().data.map((agent: { id: string }) => [agent.id, agent]));
    assert.deepEqual(byId.get('agent_retell'), {
      id: 'agent_retell',
      name: 'Retell bot',
      provider: 'retell',
      provider_agent_id: 'retell_agent_1',
      created_at: (byId.get('agent_retell') as { created_at: string }).created_at,
    });
    assert.equal((byId.get('agent_vapi') as { provider_agent_id: string }).provider_agent_id, 'asst_9');
    // ElevenLabs' and the simulator's agents are known to their provider by callgate's id itself.
    assert.equal((byId.get('agent_eleven') as { provider_agent_id: string }).provider_agent_id, 'agent_eleven');
    assert.equal((byId.get('agent_last') as { provider_agent_id: string }).provider_agent_id, 'agent_last');

    const walked: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await get(`/v1/agents?limit=2${cursor ? `&starting_after=${cursor}` : ''}`);
      assert.equal(page.statusCode, 200);
      walked.push(...ids(page));
      if (!page.json().has_more) break;
      assert.equal(page.json().data.length, 2);
      cursor = walked.at(-1);
    }
    assert.deepEqual(walked, ids(all), 'the pages, in turn, are the whole list in its order');
    const createdAts = all.json().data.map((agent: { created_at: string }) => agent.created_at);
    assert.deepEqual(createdAts, [...createdAts].sort().reverse(), 'newest first');
  });

  it('retrieves one agent; an unknown id, or another account’s agent, is 404 not_found', async () => {
    const one = await get('/v1/agents/agent_vapi');
    assert.equal(one.statusCode, 200);
    assert.deepEqual(Object.keys(one.json()).sort(), agentFields);
    assert.equal(one.json().name, 'Vapi bot');
    assertErrorShape(await get('/v1/agents/agent_nobody'), 404, 'not_found');

    const other = await t.newAccount({ agentId: 'agent_theirs' });
    assertErrorShape(await get('/v1/agents/agent_vapi', other.token), 404, 'not_found');
    assertErrorShape(await get('/v1/agents/agent_theirs'), 404, 'not_found');
    assert.deepEqual(ids(await get('/v1/agents', other.token)), ['agent_theirs']);
    // A cursor of another account is refused, not used to probe it.
    const probe = assertErrorShape(await get('/v1/agents?starting_after=agent_vapi', other.token), 400, 'invalid_request');
    assert.equal(probe.param, 'starting_after');
  });

  it('shows the same agents to a test key and a live key of the account (agents have no mode)', async () => {
    const test = await createApiKey(t.services.db, t.services.clock, { accountId: account.accountId, name: 'test', mode: 'test' });
    assert.deepEqual(ids(await get('/v1/agents', test.token)), ids(await get('/v1/agents')));
    assert.equal((await get('/v1/agents/agent_retell', test.token)).statusCode, 200);
  });

  it('refuses a bad limit or an unknown parameter, naming it; needs a key; allows GET only', async () => {
    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['colour=red', 'colour'],
    ] as const) {
      const body = assertErrorShape(await get(`/v1/agents?${query}`), 400, 'invalid_request');
      assert.equal(body.param, param, query);
    }
    assertErrorShape(await t.inject({ method: 'GET', url: '/v1/agents' }), 401, 'unauthorized');
    assertErrorShape(await t.inject({ method: 'GET', url: '/v1/agents/agent_vapi' }), 401, 'unauthorized');
    const post = await t.inject({ method: 'POST', url: '/v1/agents', headers: { authorization: `Bearer ${account.token}` } });
    assertErrorShape(post, 405, 'method_not_allowed');
  });

  it('logs each request in the request log, as any API request', async () => {
    const res = await get('/v1/agents?limit=1');
    await t.services.requestLog.flush();
    const logged = await t.services.db
      .selectFrom('request_logs')
      .select(['path', 'status', 'account_id'])
      .where('id', '=', String(res.headers['x-request-id']))
      .executeTakeFirst();
    assert.deepEqual(logged, { path: '/v1/agents?limit=1', status: 200, account_id: account.accountId });
  });
});

await forEachDialect('Agents API counts towards the rate limit', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_RATE_LIMIT_PER_MINUTE: '3' } });
  });
  after(async () => t.close());

  it('GET /v1/agents and /v1/agents/{id} share the per-key count', async () => {
    const key = await t.newAccount({ agentId: 'agent_counted' });
    const headers = { authorization: `Bearer ${key.token}` };
    const statuses: number[] = [];
    for (const url of ['/v1/agents', '/v1/agents/agent_counted', '/v1/agents', '/v1/agents/agent_counted']) {
      statuses.push((await t.inject({ method: 'GET', url, headers })).statusCode);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429]);
  });
});
