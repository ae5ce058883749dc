import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('POST /v1/calls succeeds', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  it('answers 201 with exactly the fields of spec 2.2, then livemode, and a Location', async () => {
    const before = Date.now();
    const res = await t.createCall(callBody(t, { metadata: { customer_name: 'Ada', vip: true, visits: 3, note: null } }));
    assert.equal(res.statusCode, 201);
    const body = res.json();
    // Spec 2.2's fields, then livemode (the seeded key is live), in that order.
    assert.deepEqual(Object.keys(body), ['id', 'agent_id', 'to', 'status', 'created_at', 'livemode']);
    assert.equal(body.livemode, true);
    assert.match(body.id, /^call_conv_[0-9a-z]{26}$/);
    assert.equal(body.agent_id, t.seed.agentId);
    assert.equal(body.to, '+14155550123');
    assert.equal(body.status, 'initiated');
    assert.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(Date.parse(body.created_at) >= before - 5);
    assert.equal(res.headers.location, `/v1/calls/${body.id}`);
    assert.match(String(res.headers['x-request-id']), /^req_[0-9a-z]{26}$/);
    assert.match(String(res.headers['content-type']), /^application\/json/);
  });

  it('stores the call with its metadata and never stores it twice', async () => {
    const start = await countCalls(t.services);
    const res = await t.createCall(callBody(t, { to: '+442071838750', metadata: { a: 'b' } }));
    assert.equal(res.statusCode, 201);
    assert.equal(await countCalls(t.services), start + 1);
    const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow();
    assert.equal(row.account_id, t.seed.accountId);
    assert.equal(row.status, 'initiated');
    assert.deepEqual(JSON.parse(row.metadata ?? 'null'), { a: 'b' });
  });

  it('each call gets a new id', async () => {
    const a = (await t.createCall(callBody(t))).json();
    const b = (await t.createCall(callBody(t))).json();
    assert.notEqual(a.id, b.id);
  });

  it('the call can be read back at its Location', async () => {
    const created = await t.createCall(callBody(t, { metadata: { k: 1 } }));
    const res = await t.inject({
      method: 'GET',
      url: created.headers.location as string,
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().id, created.json().id);
    assert.equal(res.json().status, 'initiated');
    assert.deepEqual(res.json().metadata, { k: 1 });
  });

  it('GET /healthz answers with the dialect', async () => {
    const res = await t.inject({ method: 'GET', url: '/healthz' });
    assert.equal(res.statusCode, 200);
    assert.deepEqual(res.json(), { status: 'ok', database: dialect });
  });

  it('GET / points the way: a browser to the portal, anything else to the portal, the API and /healthz as JSON', async () => {
    const browser = await t.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    assert.equal(browser.statusCode, 302);
    assert.equal(browser.headers.location, '/developers');
    const curl = await t.inject({ method: 'GET', url: '/', headers: { accept: '*/*' } });
    assert.equal(curl.statusCode, 200);
    assert.match(String(curl.headers['content-type']), /^application\/json/);
    const base = t.services.config.publicUrl;
    assert.deepEqual(curl.json(), {
      name: 'callgate',
      message:
        'This is the callgate API: start a call with POST /v1/calls and a Bearer API key. API keys, webhooks and a quick start are in the developer portal.',
      portal_url: `${base}/developers`,
      api_url: `${base}/v1/calls`,
      health_url: `${base}/healthz`,
    });
    const posted = await t.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload: '{}' });
    assert.equal(posted.statusCode, 405);
    assert.equal(posted.json().error, 'method_not_allowed');
  });
});
