import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../helpers/dialects.js';
import { callBody, startTestApp, type TestApp } from '../helpers/test-app.js';

await forEachDialect('Reading calls: GET /v1/calls and /v1/calls/{id}', (dialect) => {
  let t: TestApp;
  const ids: string[] = [];
  before(async () => {
    t = await startTestApp(dialect);
    for (let i = 0; i < 5; i++) ids.push((await t.createCall(callBody(t, { metadata: { n: i } }))).json().id);
  });
  after(async () => t.close());

  const get = (url: string, token = t.seed.token) =>
    t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });

  it('lists newest first with cursor pagination', async () => {
    const first = await get('/v1/calls?limit=2');
    assert.equal(first.statusCode, 200);
    assert.deepEqual(first.json().data.map((c: { id: string }) => c.id), [ids[4], ids[3]]);
    assert.equal(first.json().has_more, true);
    const second = await get(`/v1/calls?limit=2&starting_after=${ids[3]}`);
    assert.deepEqual(second.json().data.map((c: { id: string }) => c.id), [ids[2], ids[1]]);
    const last = await get(`/v1/calls?limit=2&starting_after=${ids[1]}`);
    assert.deepEqual(last.json().data.map((c: { id: string }) => c.id), [ids[0]]);
    assert.equal(last.json().has_more, false);
    const all = await get('/v1/calls');
    assert.equal(all.json().data.length, 5);
  });

  it('filters by status and agent', async () => {
    await t.services.db.updateTable('calls').set({ status: 'failed', failure_reason: 'busy' }).where('id', '=', ids[0]!).execute();
    const failed = await get('/v1/calls?status=failed');
    assert.deepEqual(failed.json().data.map((c: { id: string }) => c.id), [ids[0]]);
    assert.equal(failed.json().data[0].failure_reason, 'busy');
    assert.equal((await get(`/v1/calls?agent_id=${t.seed.agentId}`)).json().data.length, 5);
    assert.equal((await get('/v1/calls?agent_id=agent_nobody')).json().data.length, 0);
  });

  it('refuses a limit outside 1 to 100, an unknown status or parameter', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'status=ringing', 'bogus=1']) {
      const res = await get(`/v1/calls?${query}`);
      assert.equal(res.statusCode, 400, query);
      assert.equal(res.json().error, 'invalid_request');
    }
    assert.equal((await get('/v1/calls?limit=100')).statusCode, 200);
    assert.equal((await get('/v1/calls?limit=1')).json().data.length, 1);
  });

  it("never shows another account's calls, by list, by id or as a cursor", async () => {
    const other = await t.newAccount({ agentId: 'agent_other' });
    assert.deepEqual((await get('/v1/calls', other.token)).json(), { data: [], has_more: false });
    assert.equal((await get(`/v1/calls/${ids[0]}`, other.token)).statusCode, 404);
    assert.equal((await get(`/v1/calls?starting_after=${ids[2]}`, other.token)).statusCode, 400);
    assert.equal((await get('/v1/calls/call_unknown')).json().error, 'not_found');
  });

  it('requires a valid key', async () => {
    const res = await t.inject({ method: 'GET', url: '/v1/calls' });
    assert.equal(res.statusCode, 401);
  });
});
