/**
 * /v1/webhook_endpoints on both databases: the endpoint's fields, the secret shown at creation and rotation
 * only, enabled_events, paging and the url filter, PATCH and DELETE, Idempotency-Key replays, a key reaching
 * only its own account's endpoints of its own mode, the URL rules and the cap; then, with the worker running
 * and real receivers, what the endpoints receive: only their enabled_events, only events of their mode, and
 * nothing more after a 410 Gone.
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { appFor, type SeededAccount, type TestApp } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

type Json = Record<string, any>;

const endpointFields = ['created_at', 'description', 'disabled_reason', 'enabled_events', 'id', 'livemode', 'status', 'url'];

/** An endpoint answer without its secret: what every read of it shows. */
function withoutSecret(endpoint: Json): Json {
  const { secret: _secret, ...rest } = endpoint;
  return rest;
}

/** A request to the API with `token`, a JSON body when given. */
function api(
  t: TestApp,
  token: string,
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** POST /v1/webhook_endpoints that must succeed: the 201's body (with its secret). */
async function createEndpoint(t: TestApp, token: string, body: Json): Promise<Json> {
  const res = await api(t, token, 'POST', '/v1/webhook_endpoints', body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** A test-mode key of the same account. */
async function testKeyOf(t: TestApp, account: SeededAccount): Promise<string> {
  return (await createApiKey(t.services.db, t.services.clock, { accountId: account.accountId, name: 'test', mode: 'test' })).token;
}

let agents = 0;
/** A fresh account (its own agent), so that each test sees only its own endpoints. */
const freshAccount = (t: TestApp) => t.newAccount({ agentId: `agent_we_${++agents}` });

await forEachDialect('Webhook endpoints API: create, read, list, change, delete', (dialect) => {
  const t = appFor(dialect);

  it('creates an endpoint in the key mode: 201 with its fields and its secret, then no secret on any read', async () => {
    const account = await freshAccount(t);
    const res = await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: 'https://example.com/hooks', description: 'CRM' });
    assert.equal(res.statusCode, 201, res.body);
    const created = res.json() as Json;
    assert.deepEqual(Object.keys(created).sort(), [...endpointFields, 'secret'].sort());
    assert.match(created.id, /^we_[0-9a-z]+$/);
    assert.equal(res.headers.location, `/v1/webhook_endpoints/${created.id}`);
    assert.match(created.secret, /^whsec_/);
    assert.deepEqual(
      { ...created, id: undefined, secret: undefined, created_at: undefined },
      {
        id: undefined,
        secret: undefined,
        created_at: undefined,
        url: 'https://example.com/hooks',
        enabled_events: ['*'],
        description: 'CRM',
        livemode: true,
        status: 'enabled',
        disabled_reason: null,
      },
    );
    const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.mode, 'live');
    assert.equal(row.created_by_key_id, account.keyId, 'made by the key');

    const read = await api(t, account.token, 'GET', `/v1/webhook_endpoints/${created.id}`);
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), withoutSecret(created));
    assert.deepEqual(Object.keys(read.json()).sort(), endpointFields);
    const list = (await api(t, account.token, 'GET', '/v1/webhook_endpoints')).json();
    assert.deepEqual(Object.keys(list.data[0]).sort(), endpointFields);
    const patched = await api(t, account.token, 'PATCH', `/v1/webhook_endpoints/${created.id}`, { description: 'CRM (prod)' });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.deepEqual(Object.keys(patched.json()).sort(), endpointFields);
    assert.ok(!read.body.includes(created.secret) && !list.data.some((e: Json) => 'secret' in e) && !patched.body.includes('whsec_'));
  });

  it('a test-mode key makes a test endpoint (livemode false)', async () => {
    const account = await freshAccount(t);
    const created = await createEndpoint(t, await testKeyOf(t, account), { url: 'https://example.com/test-hooks' });
    assert.equal(created.livemode, false);
    const row = await t.services.db.selectFrom('webhook_endpoints').select('mode').where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.mode, 'test');
  });

  it('enabled_events: kept as given, ["*"] alone for all; unknown types, "*" among others, [] and unknown fields are 400', async () => {
    const account = await freshAccount(t);
    const some = await createEndpoint(t, account.token, {
      url: 'https://example.com/a',
      enabled_events: ['call.failed', 'batch.completed'],
    });
    assert.deepEqual(some.enabled_events, ['call.failed', 'batch.completed']);
    assert.deepEqual((await createEndpoint(t, account.token, { url: 'https://example.com/b', enabled_events: ['*'] })).enabled_events, [
      '*',
    ]);
    for (const enabled_events of [['call.completed', 'call.answered'], ['*', 'call.failed'], ['']]) {
      const res = await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: 'https://example.com/c', enabled_events });
      const body = assertErrorShape(res, 400, 'invalid_request');
      assert.equal(body.param, 'enabled_events', JSON.stringify(enabled_events));
    }
    assert.match(
      (await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: 'https://x.example', enabled_events: ['call.answered'] })).json()
        .message,
      /call\.answered.*known: call\.completed, call\.failed, batch\.completed/,
    );
    assertErrorShape(
      await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: 'https://example.com/c', enabled_events: [] }),
      400,
      'invalid_request',
    );
    assertErrorShape(
      await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: 'https://example.com/c', secret: 'whsec_mine' }),
      400,
      'invalid_request',
    );
    assertErrorShape(await api(t, account.token, 'POST', '/v1/webhook_endpoints', { enabled_events: ['*'] }), 400, 'invalid_request');
    const listed = (await api(t, account.token, 'GET', '/v1/webhook_endpoints')).json();
    assert.equal(listed.data.length, 2, 'nothing was made by the refused requests');
  });

  it('lists newest first a page at a time (limit, starting_after, has_more), and finds endpoints by exact url', async () => {
    const account = await freshAccount(t);
    const ids: string[] = [];
    for (const path of ['one', 'two', 'three'])
      ids.push((await createEndpoint(t, account.token, { url: `https://example.com/${path}` })).id);
    const first = (await api(t, account.token, 'GET', '/v1/webhook_endpoints?limit=2')).json();
    assert.deepEqual(
      first.data.map((e: Json) => e.id),
      [ids[2], ids[1]],
    );
    assert.equal(first.has_more, true);
    const second = (await api(t, account.token, 'GET', `/v1/webhook_endpoints?limit=2&starting_after=${ids[1]}`)).json();
    assert.deepEqual(second, { data: [(await api(t, account.token, 'GET', `/v1/webhook_endpoints/${ids[0]}`)).json()], has_more: false });
    const byUrl = (await api(t, account.token, 'GET', `/v1/webhook_endpoints?url=${encodeURIComponent('https://example.com/two')}`)).json();
    assert.deepEqual(
      byUrl.data.map((e: Json) => e.id),
      [ids[1]],
    );
    const prefix = (await api(t, account.token, 'GET', `/v1/webhook_endpoints?url=${encodeURIComponent('https://example.com/tw')}`)).json();
    assert.deepEqual(prefix, { data: [], has_more: false }, 'exact, not a prefix');
    // Written without its path, a URL is the one the endpoint shows (https://example.com/).
    const bare = await createEndpoint(t, account.token, { url: 'https://example.com' });
    assert.equal(bare.url, 'https://example.com/');
    const found = (await api(t, account.token, 'GET', `/v1/webhook_endpoints?url=${encodeURIComponent('https://example.com')}`)).json();
    assert.deepEqual(
      found.data.map((e: Json) => e.id),
      [bare.id],
    );
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'starting_after=we_nope', 'colour=red']) {
      assertErrorShape(await api(t, account.token, 'GET', `/v1/webhook_endpoints?${query}`), 400, 'invalid_request');
    }
    const other = await freshAccount(t);
    const theirs = await createEndpoint(t, other.token, { url: 'https://example.com/theirs' });
    const res = await api(t, account.token, 'GET', `/v1/webhook_endpoints?starting_after=${theirs.id}`);
    assert.equal(assertErrorShape(res, 400, 'invalid_request').param, 'starting_after');
  });

  it('PATCH changes the fields sent; disabled true and false disable and enable it again; an empty body is 400', async () => {
    const account = await freshAccount(t);
    const created = await createEndpoint(t, account.token, { url: 'https://example.com/old' });
    const path = `/v1/webhook_endpoints/${created.id}`;
    const changed = await api(t, account.token, 'PATCH', path, {
      url: 'https://example.com/new',
      enabled_events: ['call.completed'],
      description: 'Zap 17',
    });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.deepEqual(changed.json(), {
      ...withoutSecret(created),
      url: 'https://example.com/new',
      enabled_events: ['call.completed'],
      description: 'Zap 17',
    } as Json);
    const disabled = (await api(t, account.token, 'PATCH', path, { disabled: true })).json();
    assert.equal(disabled.status, 'disabled');
    assert.equal(disabled.disabled_reason, 'Disabled by a user.');
    assert.equal((await api(t, account.token, 'GET', path)).json().status, 'disabled');
    const enabled = (await api(t, account.token, 'PATCH', path, { disabled: false })).json();
    assert.equal(enabled.status, 'enabled');
    assert.equal(enabled.disabled_reason, null);
    assert.deepEqual((await api(t, account.token, 'PATCH', path, { enabled_events: ['*'] })).json().enabled_events, ['*']);
    assert.match(
      String(assertErrorShape(await api(t, account.token, 'PATCH', path, {}), 400, 'invalid_request').message),
      /at least one field/,
    );
    assertErrorShape(await api(t, account.token, 'PATCH', path, { enabled: false }), 400, 'invalid_request');
    assert.equal(
      assertErrorShape(await api(t, account.token, 'PATCH', path, { enabled_events: ['nope'] }), 400, 'invalid_request').param,
      'enabled_events',
    );
    assert.equal(
      assertErrorShape(await api(t, account.token, 'PATCH', path, { url: 'ftp://example.com/' }), 400, 'invalid_request').param,
      'url',
    );
    assert.equal((await api(t, account.token, 'GET', path)).json().url, 'https://example.com/new', 'a refused change changes nothing');
  });

  it('DELETE answers 204, then 404 not_found; the endpoint is gone from reads and the list', async () => {
    const account = await freshAccount(t);
    const created = await createEndpoint(t, account.token, { url: 'https://example.com/bye' });
    const path = `/v1/webhook_endpoints/${created.id}`;
    const deleted = await api(t, account.token, 'DELETE', path);
    assert.equal(deleted.statusCode, 204);
    assert.equal(deleted.body, '');
    assertErrorShape(await api(t, account.token, 'DELETE', path), 404, 'not_found');
    assertErrorShape(await api(t, account.token, 'GET', path), 404, 'not_found');
    assertErrorShape(await api(t, account.token, 'PATCH', path, { description: 'x' }), 404, 'not_found');
    assertErrorShape(await api(t, account.token, 'POST', `${path}/rotate_secret`), 404, 'not_found');
    assert.deepEqual((await api(t, account.token, 'GET', '/v1/webhook_endpoints')).json(), { data: [], has_more: false });
  });

  it('rotate_secret answers the endpoint with a new secret; the old one keeps signing beside it', async () => {
    const account = await freshAccount(t);
    const created = await createEndpoint(t, account.token, { url: 'https://example.com/rotate' });
    const res = await api(t, account.token, 'POST', `/v1/webhook_endpoints/${created.id}/rotate_secret`);
    assert.equal(res.statusCode, 200, res.body);
    const rotated = res.json();
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    assert.deepEqual(withoutSecret(rotated), withoutSecret(created));
    const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.secret, rotated.secret);
    assert.equal(row.previous_secret, created.secret);
    assert.ok(!(await api(t, account.token, 'GET', `/v1/webhook_endpoints/${created.id}`)).body.includes('whsec_'));
  });

  it('a create retried with its Idempotency-Key answers the same 201 (Idempotent-Replayed) and makes one endpoint', async () => {
    const account = await freshAccount(t);
    const body = { url: 'https://example.com/zap', enabled_events: ['call.completed'] };
    const key = { 'idempotency-key': 'zap-subscribe-1' };
    const first = await api(t, account.token, 'POST', '/v1/webhook_endpoints', body, key);
    const again = await api(t, account.token, 'POST', '/v1/webhook_endpoints', body, key);
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.deepEqual(again.json(), first.json(), 'the same endpoint, with the same secret');
    assert.equal(again.headers.location, first.headers.location);
    const rows = await t.services.db.selectFrom('webhook_endpoints').select('id').where('account_id', '=', account.accountId).execute();
    assert.equal(rows.length, 1);
    const conflict = await api(t, account.token, 'POST', '/v1/webhook_endpoints', { ...body, description: 'other' }, key);
    assertErrorShape(conflict, 409, 'idempotency_conflict');
    assertErrorShape(
      await api(t, account.token, 'POST', '/v1/webhook_endpoints', body, { 'idempotency-key': 'no spaces' }),
      400,
      'invalid_idempotency_key',
    );
  });
});

await forEachDialect('Webhook endpoints API: a key reaches its own account and mode only', (dialect) => {
  const t = appFor(dialect);

  it("another account's endpoint and the other mode's are 404 on GET, PATCH, DELETE and rotate, and in no list", async () => {
    const account = await freshAccount(t);
    const testToken = await testKeyOf(t, account);
    const other = await freshAccount(t);
    const live = await createEndpoint(t, account.token, { url: 'https://example.com/live' });
    const test = await createEndpoint(t, testToken, { url: 'https://example.com/test' });
    const theirs = await createEndpoint(t, other.token, { url: 'https://example.com/theirs' });
    const unreachable: [string, string][] = [
      [account.token, test.id],
      [account.token, theirs.id],
      [testToken, live.id],
      [testToken, theirs.id],
      [other.token, live.id],
      [other.token, test.id],
    ];
    for (const [token, id] of unreachable) {
      const path = `/v1/webhook_endpoints/${id}`;
      assertErrorShape(await api(t, token, 'GET', path), 404, 'not_found');
      assertErrorShape(await api(t, token, 'PATCH', path, { disabled: true }), 404, 'not_found');
      assertErrorShape(await api(t, token, 'POST', `${path}/rotate_secret`), 404, 'not_found');
      assertErrorShape(await api(t, token, 'DELETE', path), 404, 'not_found');
    }
    const ids = async (token: string) => (await api(t, token, 'GET', '/v1/webhook_endpoints')).json().data.map((e: Json) => e.id);
    assert.deepEqual(await ids(account.token), [live.id]);
    assert.deepEqual(await ids(testToken), [test.id]);
    assert.deepEqual(await ids(other.token), [theirs.id]);
    // None of them was changed by the refused requests.
    for (const [token, endpoint] of [
      [account.token, live],
      [testToken, test],
      [other.token, theirs],
    ] as const) {
      const read = (await api(t, token, 'GET', `/v1/webhook_endpoints/${endpoint.id}`)).json();
      assert.equal(read.status, 'enabled');
      const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id).executeTakeFirstOrThrow();
      assert.equal(row.secret, endpoint.secret);
    }
    assertErrorShape(await api(t, account.token, 'GET', '/v1/webhook_endpoints/we_nothing'), 404, 'not_found');
  });
});

await forEachDialect('Webhook endpoints API: URL rules without private delivery, and the cap', (dialect) => {
  const t = appFor(dialect, { env: { CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'false' } });
  // A public address written as one, so that no name is looked up.
  const publicUrl = (path: string) => `https://93.184.215.14/${path}`;

  it('refuses http, private, loopback, link-local and localhost URLs with 400 invalid_request, param url', async () => {
    const account = await freshAccount(t);
    const refused: [string, RegExp][] = [
      ['http://93.184.215.14/hooks', /must use https/],
      ['https://10.0.0.7/hooks', /loopback, private, link-local or reserved/],
      ['https://192.168.1.20/hooks', /loopback, private, link-local or reserved/],
      ['https://127.0.0.1:8080/hooks', /loopback, private, link-local or reserved/],
      ['https://169.254.169.254/latest/meta-data', /loopback, private, link-local or reserved/],
      ['https://[::1]/hooks', /loopback, private, link-local or reserved/],
      ['https://localhost/hooks', /localhost/],
      ['https://user:pw@93.184.215.14/hooks', /credentials/],
      ['not a url', /not a valid URL/],
    ];
    for (const [url, message] of refused) {
      const body = assertErrorShape(await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url }), 400, 'invalid_request');
      assert.equal(body.param, 'url', url);
      assert.match(String(body.message), message, url);
    }
    const created = await createEndpoint(t, account.token, { url: publicUrl('hooks') });
    const moved = await api(t, account.token, 'PATCH', `/v1/webhook_endpoints/${created.id}`, { url: 'https://10.1.2.3/hooks' });
    assert.equal(assertErrorShape(moved, 400, 'invalid_request').param, 'url');
    const rows = await t.services.db.selectFrom('webhook_endpoints').select('url').where('account_id', '=', account.accountId).execute();
    assert.deepEqual(rows, [{ url: publicUrl('hooks') }]);
  });

  it('caps an account at 50 endpoints per mode: the 51st is 400 with the cap and what to do; deleting one makes room', async () => {
    const account = await freshAccount(t);
    const ids: string[] = [];
    for (let n = 0; n < 50; n++) ids.push((await createEndpoint(t, account.token, { url: publicUrl(`hooks/${n}`) })).id);
    const refused = await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: publicUrl('hooks/50') });
    const body = assertErrorShape(refused, 400, 'invalid_request');
    assert.match(String(body.message), /50 live webhook endpoints/);
    assert.match(String(body.message), /DELETE \/v1\/webhook_endpoints\/\{id\}/);
    // Disabled ones count; the other mode has a cap of its own.
    await api(t, account.token, 'PATCH', `/v1/webhook_endpoints/${ids[0]}`, { disabled: true });
    assertErrorShape(await api(t, account.token, 'POST', '/v1/webhook_endpoints', { url: publicUrl('hooks/50') }), 400, 'invalid_request');
    await createEndpoint(t, await testKeyOf(t, account), { url: publicUrl('test-hooks') });
    assert.equal((await api(t, account.token, 'DELETE', `/v1/webhook_endpoints/${ids[1]}`)).statusCode, 204);
    await createEndpoint(t, account.token, { url: publicUrl('hooks/50') });
  });
});

await forEachDialect('Webhook endpoints API: what the endpoints receive', (dialect) => {
  const t = appFor(dialect, {
    env: { CALLGATE_SIMULATOR_DELAY_MS: '30', CALLGATE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms' },
    startWorker: true,
    overrides: { monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 },
  });
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const started = await startWebhookReceiver();
    receivers.push(started);
    return started;
  };
  after(async () => {
    for (const started of receivers) await started.close();
  });

  /** The event types the deliveries to an endpoint carry (written with each event, in its transaction). */
  async function deliveredTypes(endpointId: string): Promise<string[]> {
    const rows = await t.services.db
      .selectFrom('webhook_deliveries')
      .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
      .select('webhook_events.type')
      .where('webhook_deliveries.endpoint_id', '=', endpointId)
      .execute();
    return rows.map((row) => row.type).sort();
  }

  /** POST /v1/calls with `token` to `to`: the call's id. */
  async function call(account: SeededAccount, token: string, to = '+14155550123'): Promise<string> {
    const res = await t.createCall({ agent_id: account.agentId, to }, { token });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().id;
  }

  it('sends each endpoint only its enabled_events, signed with the secret of its creation', async () => {
    const account = await freshAccount(t);
    const [failedOnly, completedOnly] = [await receiver(), await receiver()];
    const failedEndpoint = await createEndpoint(t, account.token, { url: failedOnly.url, enabled_events: ['call.failed'] });
    const completedEndpoint = await createEndpoint(t, account.token, { url: completedOnly.url, enabled_events: ['call.completed'] });
    const completedCall = await call(account, account.token);
    const failedCall = await call(account, account.token, simulatorMagicNumbers.busy);
    const [failedHook] = await failedOnly.waitFor(1);
    const [completedHook] = await completedOnly.waitFor(1);
    const failed = verifyWebhook(failedHook!, failedEndpoint.secret);
    const completed = verifyWebhook(completedHook!, completedEndpoint.secret);
    assert.deepEqual([failed.type, failed.data.id, failed.livemode], ['call.failed', failedCall, true]);
    assert.deepEqual([completed.type, completed.data.id, completed.livemode], ['call.completed', completedCall, true]);
    // Both events are written with their deliveries: each endpoint got a delivery of its type only.
    assert.deepEqual(await deliveredTypes(failedEndpoint.id), ['call.failed']);
    assert.deepEqual(await deliveredTypes(completedEndpoint.id), ['call.completed']);
    assert.equal(failedOnly.received.length + completedOnly.received.length, 2);
  });

  it("a test key's call reaches the account's test endpoint and never its live one, and the other way round", async () => {
    const account = await freshAccount(t);
    const testToken = await testKeyOf(t, account);
    const [testReceiver, liveReceiver] = [await receiver(), await receiver()];
    const testEndpoint = await createEndpoint(t, testToken, { url: testReceiver.url });
    const liveEndpoint = await createEndpoint(t, account.token, { url: liveReceiver.url });
    const testCall = await call(account, testToken);
    const [testHook] = await testReceiver.waitFor(1);
    const testEvent = verifyWebhook(testHook!, testEndpoint.secret);
    assert.deepEqual([testEvent.type, testEvent.data.id, testEvent.livemode], ['call.completed', testCall, false]);
    assert.deepEqual(await deliveredTypes(liveEndpoint.id), [], 'the live endpoint has no delivery of the test event');

    const liveCall = await call(account, account.token);
    const [liveHook] = await liveReceiver.waitFor(1);
    const liveEvent = verifyWebhook(liveHook!, liveEndpoint.secret);
    assert.deepEqual([liveEvent.type, liveEvent.data.id, liveEvent.livemode], ['call.completed', liveCall, true]);
    assert.deepEqual(await deliveredTypes(testEndpoint.id), ['call.completed'], 'the test endpoint has its test event only');
    assert.equal(testReceiver.received.length, 1);
    assert.equal(liveReceiver.received.length, 1);
  });

  it('a receiver that answers 410 Gone has unsubscribed: the endpoint is disabled, says why, and is sent nothing more', async () => {
    const account = await freshAccount(t);
    const [gone, witness] = [await receiver(), await receiver()];
    gone.fallback = { status: 410, body: 'unsubscribed' };
    const goneEndpoint = await createEndpoint(t, account.token, { url: gone.url });
    await createEndpoint(t, account.token, { url: witness.url });
    await call(account, account.token);
    await gone.waitFor(1);
    const disabled = await eventually('the endpoint to be disabled', async () => {
      const read = (await api(t, account.token, 'GET', `/v1/webhook_endpoints/${goneEndpoint.id}`)).json();
      return read.status === 'disabled' ? read : undefined;
    });
    assert.match(disabled.disabled_reason, /answered 410 Gone/);
    const listed = (await api(t, account.token, 'GET', `/v1/webhook_endpoints?url=${encodeURIComponent(gone.url)}`)).json();
    assert.equal(listed.data[0].status, 'disabled');
    // The next event reaches the witness, and is not even queued for the disabled endpoint.
    const next = await call(account, account.token);
    const hooks = await witness.waitFor(2);
    assert.equal(JSON.parse(hooks[1]!.body).data.id, next);
    assert.deepEqual(await deliveredTypes(goneEndpoint.id), ['call.completed']);
    assert.equal(gone.received.length, 1);
  });

  it('after rotate_secret, deliveries verify with the new secret and, for 24 hours, the old one', async () => {
    const account = await freshAccount(t);
    const hooks = await receiver();
    const created = await createEndpoint(t, account.token, { url: hooks.url });
    const rotated = (await api(t, account.token, 'POST', `/v1/webhook_endpoints/${created.id}/rotate_secret`)).json();
    const callId = await call(account, account.token);
    const [hook] = await hooks.waitFor(1);
    assert.equal(verifyWebhook(hook!, rotated.secret).data.id, callId);
    assert.equal(verifyWebhook(hook!, created.secret).data.id, callId);
  });
});
