import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('Reading calls: GET /v1/calls and /v1/calls/{id}', (dialect) => {
  let t: TestApp;
  const ids: string[] = [];
  before(async () => {
    t = await startTestApp(dialect);
    for (let i = 0; i < 5; i++) ids.push((await t.createCall(callBody(t, { metadata: { n: i } }))).json().id);
  });
  after(async () => t.close());

  const get = (url: string, token = t.seed.token) => t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

  it('lists newest first with cursor pagination', async () => {
    const first = await get('/v1/calls?limit=2');
    assert.equal(first.statusCode, 200);
    assert.deepEqual(
      first.json().data.map((c: { id: string }) => c.id),
      [ids[4], ids[3]],
    );
    assert.equal(first.json().has_more, true);
    const second = await get(`/v1/calls?limit=2&starting_after=${ids[3]}`);
    assert.deepEqual(
      second.json().data.map((c: { id: string }) => c.id),
      [ids[2], ids[1]],
    );
    const last = await get(`/v1/calls?limit=2&starting_after=${ids[1]}`);
    assert.deepEqual(
      last.json().data.map((c: { id: string }) => c.id),
      [ids[0]],
    );
    assert.equal(last.json().has_more, false);
    const all = await get('/v1/calls');
    assert.equal(all.json().data.length, 5);
  });

  it('orders by creation time, not by id: provider conversation ids need not sort by time', async () => {
    const other = await t.newAccount({ agentId: 'agent_order' });
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await t.createCall({ agent_id: 'agent_order', to: '+14155550123' }, { token: other.token });
      made.push(res.json().id);
    }
    const [a, b, c] = [...made].sort();
    // c has the greatest id but is the oldest; a and b were made in the same millisecond.
    const setCreated = (id: string, at: string) =>
      t.services.db.updateTable('calls').set({ created_at: at }).where('id', '=', id!).execute();
    await setCreated(a!, '2026-01-01T10:00:00.000Z');
    await setCreated(b!, '2026-01-01T10:00:00.000Z');
    await setCreated(c!, '2026-01-01T09:00:00.000Z');
    const all = await get('/v1/calls', other.token);
    assert.deepEqual(
      all.json().data.map((call: { id: string }) => call.id),
      [b, a, c],
    );
    const page1 = await get('/v1/calls?limit=1', other.token);
    assert.deepEqual(
      page1.json().data.map((call: { id: string }) => call.id),
      [b],
    );
    const page2 = await get(`/v1/calls?limit=1&starting_after=${b}`, other.token);
    assert.deepEqual(
      page2.json().data.map((call: { id: string }) => call.id),
      [a],
    );
    const page3 = await get(`/v1/calls?limit=1&starting_after=${a}`, other.token);
    assert.deepEqual(page3.json(), { data: [page3.json().data[0]], has_more: false });
    assert.equal(page3.json().data[0].id, c);
  });

  it('filters by status and agent', async () => {
    await t.services.db.updateTable('calls').set({ status: 'failed', failure_reason: 'busy' }).where('id', '=', ids[0]!).execute();
    const failed = await get('/v1/calls?status=failed');
    assert.deepEqual(
      failed.json().data.map((c: { id: string }) => c.id),
      [ids[0]],
    );
    assert.equal(failed.json().data[0].failure_reason, 'busy');
    assert.equal((await get(`/v1/calls?agent_id=${t.seed.agentId}`)).json().data.length, 5);
    assert.equal((await get('/v1/calls?agent_id=agent_nobody')).json().data.length, 0);
  });

  it('refuses a limit outside 1 to 100, an unknown status or parameter, naming the parameter and what it takes', async () => {
    const limitMessage = 'limit must be an integer from 1 to 100.';
    const cases: [string, string, string][] = [
      ['limit=0', 'limit', limitMessage],
      ['limit=101', 'limit', limitMessage],
      ['limit=abc', 'limit', limitMessage],
      ['limit=1.5', 'limit', limitMessage],
      ['limit=-1', 'limit', limitMessage],
      ['limit=', 'limit', limitMessage],
      ['limit=1000', 'limit', limitMessage],
      ['status=ringing', 'status', 'status must be one of initiated, completed, failed.'],
      [
        'starting_after=call_unknown',
        'starting_after',
        'starting_after is not a live-mode call of this account: pass the id of the last call of the page before, listed with this key.',
      ],
      ['bogus=1', 'bogus', 'Unknown query parameter: bogus.'],
      ['limit=1&limit=2', 'limit', 'limit must be given once.'],
      ['status=failed&status=completed', 'status', 'status must be given once.'],
    ];
    for (const [query, param, message] of cases) {
      const res = await get(`/v1/calls?${query}`);
      assert.equal(res.statusCode, 400, query);
      const { request_id: requestId, ...body } = res.json<Record<string, unknown>>();
      assert.match(String(requestId), /^req_/);
      assert.deepEqual(body, { error: 'invalid_request', message, param, retryable: false }, query);
    }
    assert.equal((await get('/v1/calls?limit=100')).statusCode, 200);
    assert.equal((await get('/v1/calls?limit=1')).json().data.length, 1);
    const noId = await get('/v1/calls/');
    assert.equal(noId.statusCode, 404);
    assert.equal(noId.json().message, 'A call id is needed: GET /v1/calls/{id}.');
  });

  it("never shows another account's calls, by list, by id or as a cursor", async () => {
    const other = await t.newAccount({ agentId: 'agent_other' });
    assert.deepEqual((await get('/v1/calls', other.token)).json(), { data: [], has_more: false });
    assert.equal((await get(`/v1/calls/${ids[0]}`, other.token)).statusCode, 404);
    assert.equal((await get(`/v1/calls?starting_after=${ids[2]}`, other.token)).statusCode, 400);
    assert.equal((await get('/v1/calls/call_unknown')).json().error, 'not_found');
  });

  it('shows a test key only the calls made in test mode, and a live key only the live ones', async () => {
    const live = await t.newAccount({ agentId: 'agent_modes', mode: 'live' });
    const test = await createApiKey(t.services.db, t.services.clock, { accountId: live.accountId, name: 'test key', mode: 'test' });
    const liveCall = (await t.createCall({ agent_id: 'agent_modes', to: '+14155550123' }, { token: live.token })).json().id as string;
    const testCall = (await t.createCall({ agent_id: 'agent_modes', to: '+14155550124' }, { token: test.token })).json().id as string;
    const idsOf = async (url: string, token: string) => (await get(url, token)).json().data.map((call: { id: string }) => call.id);
    assert.deepEqual(await idsOf('/v1/calls', live.token), [liveCall]);
    assert.deepEqual(await idsOf('/v1/calls', test.token), [testCall]);
    assert.equal((await get(`/v1/calls/${liveCall}`, live.token)).statusCode, 200);
    assert.equal((await get(`/v1/calls/${testCall}`, test.token)).statusCode, 200);
    const crossed = await get(`/v1/calls/${liveCall}`, test.token);
    assert.equal(crossed.statusCode, 404);
    assert.equal(crossed.json().message, `No test-mode call ${liveCall} in this account.`);
    assert.equal((await get(`/v1/calls/${testCall}`, live.token)).statusCode, 404);
    assert.equal((await get(`/v1/calls?starting_after=${liveCall}`, test.token)).statusCode, 400);
  });

  it('refuses an empty agent_id filter instead of ignoring it', async () => {
    const res = await get('/v1/calls?agent_id=');
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error, 'invalid_request');
    assert.equal(res.json().param, 'agent_id');
  });

  it('requires a valid key', async () => {
    const res = await t.inject({ method: 'GET', url: '/v1/calls' });
    assert.equal(res.statusCode, 401);
  });
});

await forEachDialect('Reading calls counts towards the rate limit', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_RATE_LIMIT_PER_MINUTE: '10' } });
  });
  after(async () => t.close());

  it('GET /v1/calls and /v1/calls/{id} share the per-key count with POST /v1/calls', async () => {
    const key = await t.newAccount({ agentId: 'agent_reader' });
    const headers = { authorization: `Bearer ${key.token}` };
    const created = await t.createCall({ agent_id: key.agentId, to: '+14155550123' }, { token: key.token });
    assert.equal(created.statusCode, 201);
    const statuses: number[] = [];
    for (let i = 0; i < 9; i++) {
      const url = i % 2 === 0 ? '/v1/calls' : `/v1/calls/${created.json().id}`;
      statuses.push((await t.inject({ method: 'GET', url, headers })).statusCode);
    }
    assert.deepEqual(statuses, Array(9).fill(200));
    for (const url of ['/v1/calls', `/v1/calls/${created.json().id}`]) {
      const limited = await t.inject({ method: 'GET', url, headers });
      assert.equal(limited.statusCode, 429, url);
      assert.equal(limited.json().error, 'rate_limit_exceeded');
      assert.ok(Number(limited.headers['retry-after']) >= 1);
    }
    const posted = await t.createCall({ agent_id: key.agentId, to: '+14155550123' }, { token: key.token });
    assert.equal(posted.statusCode, 429, 'the reads used up the count of POST too');
  });
});
