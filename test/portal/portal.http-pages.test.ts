/**
 * The developer portal's pages over HTTP, on SQLite and PostgreSQL, with the worker delivering to a local
 * receiver: the token shown once, webhooks, calls, the request log, escaping of hostile values, and 404
 * for every id of another account.
 */
import assert from 'node:assert/strict';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { after, before, it } from 'node:test';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import type { Dialect } from '../support/test-database.js';
import { until } from '../support/wait.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { formTokenOf, signedInClient, type PortalClient } from '../support/portal-client.js';

const hostile = `<script>alert("x")</script>`;
const hostileAttr = `"><img src=x onerror=alert(1)>`;

function assertEscaped(page: string, where: string): void {
  assert.ok(!page.includes('<script>alert'), `${where}: a raw <script> from user data`);
  assert.ok(!page.includes('<img src=x'), `${where}: a raw <img> from user data`);
}

let t: TestApp;
let receiver: WebhookReceiver;
let client: PortalClient;

/** Each part below starts an app of its own, with the worker delivering to a local receiver, and signs in. */
function withPortal(dialect: Dialect): void {
  before(async () => {
    t = await startTestApp(dialect, { startWorker: true, overrides: { dispatcherSweepIntervalMs: 50, monitorSweepIntervalMs: 20 } });
    receiver = await startWebhookReceiver();
    client = await signedInClient(t);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });
}

await forEachDialect('Portal pages: API keys and webhook endpoints', (dialect) => {
  withPortal(dialect);

  it('shows a new key token once; the list then shows only its prefix; the key works until revoked', async () => {
    const created = await client.post('/developers/api-keys', {
      name: 'CRM staging',
      mode: 'test',
      form_token: await client.keyFormToken(),
    });
    assert.equal(created.statusCode, 200);
    assert.equal(created.headers['cache-control'], 'no-store');
    const token = /cg_test_[0-9a-f]{64}/.exec(created.body)?.[0];
    assert.ok(token, 'the full token is on the answer to the form');
    assert.match(created.body, /shown only this once/);
    assert.match(created.body, /data-replace-url="\/developers\/api-keys"/);
    const list = await client.get('/developers/api-keys');
    assert.ok(!list.body.includes(token), 'never shown again');
    assert.ok(list.body.includes(`${token.slice(0, 12)}…`), 'the prefix is listed');
    assert.equal((await t.createCall(callBody(t), { token })).statusCode, 201);

    const keyId = /\/developers\/api-keys\/(key_[a-z0-9]+)\/revoke/.exec(list.body)?.[1];
    assert.ok(keyId);
    const confirm = await client.get(`/developers/api-keys/${keyId}/revoke`);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /immediate and irreversible/);
    const revoked = await client.post(`/developers/api-keys/${keyId}/revoke`, {});
    assert.equal(revoked.statusCode, 303);
    assert.equal(revoked.headers.location, '/developers/api-keys?notice=key_revoked');
    assert.equal((await t.createCall(callBody(t), { token })).statusCode, 401);
    assert.match((await client.get('/developers/api-keys?notice=key_revoked')).body, /The key is revoked/);
  });

  it('makes one key per form: the form sent again (a reload without JavaScript, a double click) makes no second key and shows no token', async () => {
    const namesOf = async (name: string) =>
      (
        await t.services.db
          .selectFrom('api_keys')
          .select('id')
          .where('account_id', '=', t.seed.accountId)
          .where('name', '=', name)
          .execute()
      ).length;
    const form = { name: 'Resubmitted', mode: 'live', form_token: await client.keyFormToken() };
    const first = await client.post('/developers/api-keys', form);
    assert.equal(first.statusCode, 200);
    const token = /cg_live_[0-9a-f]{64}/.exec(first.body)?.[0];
    assert.ok(token, 'the first answer shows the token');
    assert.notEqual(formTokenOf(first.body), form.form_token, 'the answer carries a fresh form for the next key');

    const again = await client.post('/developers/api-keys', form);
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /This form was already sent: no new key was made/);
    assert.ok(again.body.includes(`(<code>${token.slice(0, 12)}…</code>)`), 'names the key the first submission made');
    assert.doesNotMatch(again.body, /cg_(live|test)_[0-9a-f]{64}/, 'the token is never shown a second time');
    assert.equal(await namesOf('Resubmitted'), 1);

    // Two copies of one form at the same moment: one key, one token shown.
    const twice = { name: 'Double click', mode: 'test', form_token: await client.keyFormToken() };
    const answers = await Promise.all([client.post('/developers/api-keys', twice), client.post('/developers/api-keys', twice)]);
    assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 409]);
    assert.equal(answers.filter((answer) => /cg_test_[0-9a-f]{64}/.test(answer.body)).length, 1);
    assert.equal(await namesOf('Double click'), 1);

    // A form without its one-time token (a page from before this change, a script) makes nothing.
    const stale = await client.post('/developers/api-keys', { name: 'No form token', mode: 'test' });
    assert.equal(stale.statusCode, 400);
    assert.match(stale.body, /This form is out of date/);
    assert.equal(await namesOf('No form token'), 0);
    assert.equal(
      (await client.post('/developers/api-keys', { name: 'No form token', mode: 'test', form_token: formTokenOf(stale.body) })).statusCode,
      200,
    );
  });

  it('refuses a key without a name and keeps the form', async () => {
    const response = await client.post('/developers/api-keys', { name: '   ', mode: 'live', form_token: await client.keyFormToken() });
    assert.equal(response.statusCode, 400);
    assert.match(response.body, /Give the key a name\./);
    assert.match(response.body, /value="live" checked/);
  });

  it('adds an endpoint, reveals and rotates its secret, sends a test event and resends it; the attempts show', async () => {
    // A receiver of its own: calls of other tests may still end and be delivered to the shared one.
    const receiver = await startWebhookReceiver();
    try {
      await endpointFlow(receiver);
    } finally {
      await receiver.close();
    }
  });

  async function endpointFlow(receiver: WebhookReceiver): Promise<void> {
    const bad = await client.post('/developers/webhooks', { url: 'ftp://example.com/x', event_types: 'call.completed', enabled: 'on' });
    assert.equal(bad.statusCode, 400);
    // One rule, one message: this server allows private targets, so its hint and its refusal both say http too.
    assert.match(bad.body, /The URL must use https or http\./);
    assert.match(
      bad.body,
      /id="url-hint">Where events are POSTed\. An https or http URL; this server also accepts local and private addresses/,
    );
    const none = await client.post('/developers/webhooks', { url: receiver.url, enabled: 'on' });
    assert.equal(none.statusCode, 400);
    assert.match(none.body, /Choose at least one event type\./);

    const created = await client.post('/developers/webhooks', {
      url: receiver.url,
      description: 'Local receiver',
      event_types: ['call.completed', 'call.failed'],
      enabled: 'on',
    });
    assert.equal(created.statusCode, 303);
    const page = String(created.headers.location).split('?')[0]!;
    const shown = await client.get(page);
    assert.equal(shown.statusCode, 200);
    assert.doesNotMatch(shown.body, /whsec_[A-Za-z0-9+/=]{20,}/, 'the secret is hidden until asked for');
    const revealed = await client.post(`${page}/secret`, {});
    const secret = /whsec_[A-Za-z0-9+/=]{20,}/.exec(revealed.body)?.[0];
    assert.ok(secret);
    // Rotation answers with a redirect, so a reload (without JavaScript) cannot rotate a second time and
    // end the overlap of the secret the receiver still uses.
    const rotated = await client.post(`${page}/rotate`, {});
    assert.equal(rotated.statusCode, 303);
    assert.equal(rotated.headers.location, `${page}?notice=secret_rotated`);
    const afterRotation = await client.get(String(rotated.headers.location));
    assert.match(afterRotation.body, /old and the new secret/);
    assert.doesNotMatch(afterRotation.body, /whsec_[A-Za-z0-9+/=]{20,}/, 'still hidden until asked for');
    const newSecret = /whsec_[A-Za-z0-9+/=]{20,}/.exec((await client.post(`${page}/secret`, {})).body)?.[0];
    assert.ok(newSecret && newSecret !== secret);
    const endpointRow = await t.services.db
      .selectFrom('webhook_endpoints')
      .select(['secret', 'previous_secret'])
      .where('id', '=', page.split('/').at(-1)!)
      .executeTakeFirstOrThrow();
    assert.deepEqual(endpointRow, { secret: newSecret, previous_secret: secret }, 'the old secret still signs for the overlap');

    receiver.respond = (hook) => (hook.body.includes('"type":"webhook.test"') ? { status: 200, body: 'thanks' } : undefined);
    const test = await client.post(`${page}/test`, {});
    assert.equal(test.headers.location, `${page}?notice=test_sent`);
    const testHooks = () => receiver.received.filter((hook) => hook.body.includes('"type":"webhook.test"'));
    const [hook] = await until('the test event', async () => (testHooks().length >= 1 ? testHooks() : undefined));
    const withAttempt = await until('the attempt on the endpoint page', async () => {
      const response = await client.get(page);
      return response.body.includes('thanks') ? response.body : undefined;
    });
    assert.match(withAttempt, /badge-ok">200</);
    assert.match(withAttempt, /<code>webhook\.test<\/code>/);

    const endpointId = page.split('/').at(-1)!;
    const { id: deliveryId } = await t.services.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('endpoint_id', '=', endpointId)
      .where('trigger', '=', 'test')
      .executeTakeFirstOrThrow();
    assert.ok(withAttempt.includes(`/deliveries/${deliveryId}/resend`), 'a resend button for the delivery');
    const resent = await client.post(`${page}/deliveries/${deliveryId}/resend`, { back: page });
    assert.equal(resent.headers.location, `${page}?notice=resent`);
    const [, again] = await until('the resent test event', async () => (testHooks().length >= 2 ? testHooks() : undefined));
    assert.equal(again!.headers['webhook-id'], hook!.headers['webhook-id'], 'the same event again');

    const edit = await client.get(`${page}/edit`);
    assert.match(edit.body, /value="Local receiver"/);
    // A description over 500 characters is refused with the form again, never stored cut short.
    const tooLong = await client.post(page, { url: receiver.url, description: 'd'.repeat(501), event_types: 'call.completed' });
    assert.equal(tooLong.statusCode, 400, tooLong.body.slice(0, 200));
    assert.match(tooLong.body, /The description is 501 characters long; at most 500 are allowed\./);
    assert.match((await client.get(page)).body, /Local receiver/);
    const saved = await client.post(page, { url: receiver.url, description: 'Renamed', event_types: 'call.completed' });
    assert.equal(saved.headers.location, `${page}?notice=endpoint_updated`);
    const disabledPage = await client.get(page);
    assert.match(disabledPage.body, /badge-bad">disabled</);
    assert.equal((await client.post(`${page}/test`, {})).statusCode, 409);
  }

  it('shows each endpoint with its mode, and one made over the API with the name of the key that made it', async () => {
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'Zapier <hooks>', mode: 'test' });
    const made = await t.inject({
      method: 'POST',
      url: '/v1/webhook_endpoints',
      headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
      payload: { url: 'https://hooks.example.com/zapier', description: 'From Zapier' },
    });
    assert.equal(made.statusCode, 201, made.body);
    const madeBy = `Zapier &lt;hooks&gt; (${key.token.slice(0, 12)}`;
    const list = (await client.get('/developers/webhooks')).body;
    const row = list.split('<tr>').find((cells) => cells.includes('hooks.example.com/zapier')) ?? '';
    assert.match(row, /badge-\w+">test</);
    assert.ok(row.includes(`Made over the API by the key ${madeBy}`), row);
    const page = (await client.get(`/developers/webhooks/${made.json().id}`)).body;
    assert.ok(page.includes(`over the API by the key ${madeBy}`), 'on its page too');
    assert.match(page, /<dt>Mode<\/dt><dd><span class="badge badge-\w+">test<\/span>/);
  });
});

await forEachDialect('Portal pages: calls and the request log', (dialect) => {
  withPortal(dialect);

  it('lists calls newest first with filters, and shows a call with its outcome, events and deliveries', async () => {
    receiver.fallback = { status: 200, body: 'ok' };
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
    const completed = (await t.createCall(callBody(t, { metadata: { customer: 'Ada' } }))).json();
    const failed = (await t.createCall(callBody(t, { to: '+15005550001' }))).json();
    await until(
      'the failed outcome',
      async () => (await client.get(`/developers/calls/${failed.id}`)).body.includes('<code>busy</code>') || undefined,
    );
    const list = await client.get('/developers/calls');
    assert.ok(list.body.indexOf(failed.id) < list.body.indexOf(completed.id), 'newest first');
    const onlyFailed = await client.get('/developers/calls?status=failed');
    assert.ok(onlyFailed.body.includes(failed.id) && !onlyFailed.body.includes(completed.id));
    const byOtherAgent = await client.get('/developers/calls?agent_id=agent_nobody');
    assert.match(byOtherAgent.body, /No calls match these filters\./);
    await upsertAgent(t.services.db, t.services.clock, {
      accountId: t.seed.accountId,
      agentId: 'agent_second',
      name: 'Second bot',
      provider: 'simulator',
      phoneNumberId: 'phnum_second',
      phoneNumber: '+14155550177',
    });
    const agentsPage = (await client.get('/developers/agents')).body;
    assert.match(
      agentsPage,
      /\+14155550177<br><code class="small">phnum_second<\/code>/,
      "the agent's number, then its id at the provider",
    );
    const second = (await t.createCall(callBody(t, { agent_id: 'agent_second' }))).json();
    const bySecond = await client.get('/developers/calls?agent_id=agent_second');
    assert.ok(
      bySecond.body.includes(second.id) && !bySecond.body.includes(completed.id) && !bySecond.body.includes(failed.id),
      'only the agent’s calls',
    );
    assert.match(bySecond.body, /<option value="agent_second" selected>Second bot \(agent_second\)<\/option>/, 'the filter stays chosen');
    const bySeed = await client.get(`/developers/calls?agent_id=${t.seed.agentId}&status=failed`);
    assert.ok(
      bySeed.body.includes(failed.id) && !bySeed.body.includes(completed.id) && !bySeed.body.includes(second.id),
      'agent and status together',
    );

    const page = await until('the completed call with its delivered event', async () => {
      const response = await client.get(`/developers/calls/${completed.id}`);
      return /call\.completed/.test(response.body) && /badge-ok">200</.test(response.body) ? response.body : undefined;
    });
    assert.match(page, /Duration<\/dt><dd>\d+ s/);
    assert.match(page, /&quot;customer&quot;: &quot;Ada&quot;/);
    assert.ok(page.includes(receiver.url));
    assert.ok(
      page.includes(`href="/developers/webhooks/${endpoint.id}"`) && page.includes(`/developers/webhooks/${endpoint.id}/deliveries/`),
    );

    // Once the endpoint is deleted, its deliveries stay on the call's page, without a link or a resend.
    assert.equal((await client.post(`/developers/webhooks/${endpoint.id}/delete`, {})).statusCode, 303);
    const after = (await client.get(`/developers/calls/${completed.id}`)).body;
    assert.ok(after.includes(receiver.url) && after.includes('(deleted)'));
    assert.ok(
      !after.includes(`href="/developers/webhooks/${endpoint.id}"`) && !after.includes(`/developers/webhooks/${endpoint.id}/deliveries/`),
    );
  });

  it("shows each call as test or live, and names each delivery's endpoint in its summary", async () => {
    receiver.fallback = { status: 200, body: 'ok' };
    const { db, clock } = t.services;
    // Test endpoints: the test call's event goes to them (a live one would get only the live call's).
    const named = await createEndpoint(db, clock, true, {
      accountId: t.seed.accountId,
      url: receiver.url,
      description: 'CRM <sync>',
      mode: 'test',
    });
    const bare = await createEndpoint(db, clock, true, { accountId: t.seed.accountId, url: `${receiver.url}?bare=1`, mode: 'test' });
    const testToken = (await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' })).token;
    const live = (await t.createCall(callBody(t))).json();
    const test = (await t.createCall(callBody(t), { token: testToken })).json();

    const modeIn = (page: string, callId: string) => {
      const row = page.split('<tr>').find((cells) => cells.includes(`<code>${callId}</code>`)) ?? '';
      return /<span class="badge badge-\w+">(test|live)<\/span>/.exec(row)?.[1];
    };
    const list = (await client.get('/developers/calls')).body;
    assert.match(list, /<th scope="col">Mode<\/th>/);
    assert.deepEqual([modeIn(list, live.id), modeIn(list, test.id)], ['live', 'test']);
    const overview = (await client.get('/developers')).body;
    assert.deepEqual([modeIn(overview, live.id), modeIn(overview, test.id)], ['live', 'test']);

    const page = await until('both deliveries of the test call', async () => {
      const body = (await client.get(`/developers/calls/${test.id}`)).body;
      // Each delivery's summary shows its last status: both delivered.
      return (body.match(/<summary>(?:(?!<\/summary>)[\s\S])*badge-ok">200</g) ?? []).length === 2 ? body : undefined;
    });
    assert.match(page, /<p><span class="badge badge-\w+">completed<\/span> <span class="badge badge-neutral">test<\/span><\/p>/);
    const summaries = [...page.matchAll(/<summary>([\s\S]*?)<\/summary>/g)]
      .map((match) => match[1]!)
      .filter((text) => text.includes('delivery-main'));
    assert.equal(summaries.length, 2);
    assert.ok(
      summaries.some((summary) => summary.includes('→ CRM &lt;sync&gt;')),
      'the description, escaped',
    );
    assert.ok(
      summaries.some((summary) => summary.includes(`→ ${bare.url}`)),
      'the URL when there is no description',
    );
    for (const endpoint of [named, bare]) {
      await db
        .updateTable('webhook_endpoints')
        .set({ enabled: 0, deleted_at: new Date().toISOString() })
        .where('id', '=', endpoint.id)
        .execute();
    }
  });

  it('shows the dial of a call: its steps, and for a call found after a lost answer, how it was found', async () => {
    const testToken = (await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' }))
      .token;
    const plain = (await t.createCall(callBody(t), { token: testToken })).json();
    const plainPage = (await client.get(`/developers/calls/${plain.id}`)).body;
    assert.match(plainPage, /<h2 id="dial">Dial<\/h2>/);
    assert.match(plainPage, /The provider placed the call/);

    // +15005550004: the simulator places the call and loses its answer; the dial job finds it within seconds.
    const lost = await t.createCall(callBody(t, { to: '+15005550004' }), { token: testToken, idempotencyKey: `portal-lost-${dialect}` });
    assert.equal(lost.statusCode, 504, lost.body);
    const foundId = await until('the lost call to be found', async () => {
      const retry = await t.createCall(callBody(t, { to: '+15005550004' }), { token: testToken, idempotencyKey: `portal-lost-${dialect}` });
      return retry.statusCode === 201 ? (retry.json().id as string) : undefined;
    });
    const page = (await client.get(`/developers/calls/${foundId}`)).body;
    assert.match(page, /answer to this call&#39;s create request was lost|answer to this call's create request was lost/);
    assert.match(page, /The answer was lost/);
    assert.match(page, /Found at the provider/);
  });

  it('finds a request by the request_id of its error', async () => {
    const response = await t.createCall(callBody(t, { agent_id: 'agent_unknown' }));
    const requestId = response.json().request_id as string;
    await t.services.requestLog.flush();
    const found = await client.get(`/developers/requests?request_id=${requestId}`);
    assert.ok(found.body.includes(requestId));
    assert.match(found.body, /<code class="error-code">agent_not_found<\/code>/);
    assert.match(found.body, /badge-warn">403</);
    const missing = await client.get('/developers/requests?request_id=req_nothing');
    assert.match(missing.body, /No request <code>req_nothing<\/code>/);
  });
});

await forEachDialect('Portal pages: escaping, other accounts and unknown paths', (dialect) => {
  withPortal(dialect);

  it('escapes hostile names, descriptions, metadata, paths and response excerpts on every page', async () => {
    const evil = await t.newAccount({ agentId: 'agent_evil', mode: 'test' });
    await t.services.db.updateTable('accounts').set({ name: hostile }).where('id', '=', evil.accountId).execute();
    await upsertAgent(t.services.db, t.services.clock, {
      accountId: evil.accountId,
      agentId: 'agent_evil',
      name: hostile,
      provider: 'simulator',
      phoneNumberId: hostileAttr,
      phoneNumber: hostile,
    });
    const evilClient = await signedInClient(t, evil);
    await evilClient.post('/developers/api-keys', {
      name: hostile + hostileAttr,
      mode: 'test',
      form_token: await evilClient.keyFormToken(),
    });
    receiver.fallback = { status: 200, body: `<script>alert("r")</script>${hostileAttr}` };
    const created = await evilClient.post('/developers/webhooks', {
      url: receiver.url,
      description: hostile + hostileAttr,
      event_types: ['call.completed', 'call.failed'],
      enabled: 'on',
    });
    const endpointPage = String(created.headers.location).split('?')[0]!;
    const call = await t.createCall(
      { agent_id: 'agent_evil', to: '+14155550123', metadata: { note: hostile, [hostileAttr.slice(0, 30)]: hostileAttr } },
      { token: evil.token },
    );
    assert.equal(call.statusCode, 201);
    const callId = call.json().id as string;
    // A raw HTTP client can put these bytes in a path (inject would percent-encode them), so log one directly.
    t.services.requestLog.add({
      id: 'req_hostile_path',
      account_id: evil.accountId,
      api_key_id: evil.keyId,
      key_prefix: 'cg_test_0000',
      method: 'GET',
      path: `/v1/calls?x=<script>alert("p")</script>`,
      status: 400,
      error_code: 'invalid_request',
      idempotency_key: hostile,
      duration_ms: 1,
      replayed: 0,
      created_at: new Date().toISOString(),
    });
    await t.services.requestLog.flush();
    await until(
      'the hostile excerpt',
      async () => (await evilClient.get(endpointPage)).body.includes('&lt;script&gt;alert(&quot;r&quot;)') || undefined,
    );
    await until(
      'the call event',
      async () => (await evilClient.get(`/developers/calls/${callId}`)).body.includes('call.completed') || undefined,
    );

    for (const url of [
      '/developers',
      '/developers/api-keys',
      '/developers/webhooks',
      endpointPage,
      `${endpointPage}/edit`,
      '/developers/agents',
      '/developers/calls',
      `/developers/calls/${callId}`,
      '/developers/requests',
    ]) {
      const response = await evilClient.get(url);
      assert.equal(response.statusCode, 200, url);
      assertEscaped(response.body, url);
      assert.ok(
        response.body.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;') || url.endsWith('/requests'),
        `${url} shows the hostile text as text`,
      );
    }
    const requests = await evilClient.get('/developers/requests');
    assert.ok(requests.body.includes('&lt;script&gt;alert(&quot;p&quot;)'), 'the hostile path as text');
    const search = await evilClient.get(`/developers/requests?request_id=${encodeURIComponent(hostile)}`);
    assertEscaped(search.body, 'request search');
    const signIn = await evilClient.get(`/developers/sign-in?next=${encodeURIComponent(`/developers/${hostile}`)}`);
    assertEscaped(signIn.body, 'sign-in next');
  });

  it('answers 404 for every id of another account, by page and by form, and changes nothing there', async () => {
    const other = await t.newAccount({ agentId: 'agent_other' });
    const otherEndpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: other.accountId, url: receiver.url });
    const otherCall = (await t.createCall({ agent_id: 'agent_other', to: '+14155550123' }, { token: other.token })).json();
    const otherDelivery = await until("the other account's delivery", () =>
      t.services.db
        .selectFrom('webhook_deliveries')
        .select(['id', 'endpoint_id'])
        .where('account_id', '=', other.accountId)
        .executeTakeFirst(),
    );
    const ownEndpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
    const before = {
      key: await t.services.db.selectFrom('api_keys').selectAll().where('id', '=', other.keyId).executeTakeFirstOrThrow(),
      endpoint: await t.services.db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', otherEndpoint.id)
        .executeTakeFirstOrThrow(),
      deliveries: (await t.services.db.selectFrom('webhook_deliveries').select('id').where('account_id', '=', other.accountId).execute())
        .length,
    };

    const pages = [
      `/developers/api-keys/${other.keyId}/revoke`,
      `/developers/webhooks/${otherEndpoint.id}`,
      `/developers/webhooks/${otherEndpoint.id}/edit`,
      `/developers/calls/${otherCall.id}`,
    ];
    for (const url of pages) {
      const response = await client.get(url);
      assert.equal(response.statusCode, 404, url);
      assert.match(response.body, /There is no such page in this account\./);
    }
    const forms: [string, Record<string, string>][] = [
      [`/developers/api-keys/${other.keyId}/revoke`, {}],
      [`/developers/webhooks/${otherEndpoint.id}`, { url: receiver.url, description: 'taken', event_types: 'call.completed' }],
      [`/developers/webhooks/${otherEndpoint.id}/delete`, {}],
      [`/developers/webhooks/${otherEndpoint.id}/secret`, {}],
      [`/developers/webhooks/${otherEndpoint.id}/rotate`, {}],
      [`/developers/webhooks/${otherEndpoint.id}/test`, {}],
      [`/developers/webhooks/${otherDelivery.endpoint_id}/deliveries/${otherDelivery.id}/resend`, {}],
      [`/developers/webhooks/${ownEndpoint.id}/deliveries/${otherDelivery.id}/resend`, {}],
    ];
    for (const [url, form] of forms) {
      const response = await client.post(url, form);
      assert.equal(response.statusCode, 404, url);
      assert.ok(!response.body.includes(otherEndpoint.secret), `${url} shows no secret`);
    }
    assert.deepEqual(
      await t.services.db.selectFrom('api_keys').selectAll().where('id', '=', other.keyId).executeTakeFirstOrThrow(),
      before.key,
    );
    assert.deepEqual(
      await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', otherEndpoint.id).executeTakeFirstOrThrow(),
      before.endpoint,
    );
    assert.equal(
      (await t.services.db.selectFrom('webhook_deliveries').select('id').where('account_id', '=', other.accountId).execute()).length,
      before.deliveries,
    );

    const lists = [
      '/developers',
      '/developers/api-keys',
      '/developers/webhooks',
      '/developers/agents',
      '/developers/calls',
      `/developers/calls?agent_id=agent_other`,
      '/developers/requests',
    ];
    for (const url of lists) {
      const body = (await client.get(url)).body;
      for (const foreign of [other.keyId, otherEndpoint.id, otherCall.id, 'agent_other']) {
        assert.ok(!body.includes(foreign) || (url.includes('agent_id=') && foreign === 'agent_other'), `${url} shows ${foreign}`);
      }
    }
  });

  it('answers unknown portal paths and odd ids with an HTML 404, while /v1 stays JSON-only', async () => {
    const long = 'x'.repeat(101); // over Fastify's maxParamLength: the router refuses it before any hook runs
    const notFound = [
      '/developers/nothing-here',
      '/developers/calls/%00',
      '/developers/webhooks/a%2Fb',
      `/developers/calls/${'x'.repeat(90)}`,
      `/developers/calls/${long}`,
      `/developers/webhooks/${long}`,
      `/developers/webhooks/${long}/edit`,
      `/developers/api-keys/${long}/revoke`,
      `/developers/webhooks/we_1/deliveries/${long}/resend`,
    ];
    const ordinary = await client.get('/developers/nothing-here');
    for (const url of notFound) {
      const response = await client.get(url);
      assert.equal(response.statusCode, 404, url);
      assert.match(String(response.headers['content-type']), /^text\/html/, url);
      assert.match(response.body, /There is no such page in this account\./, url);
      assert.match(response.body, /aria-label="Portal"/, `${url}: the page keeps the navigation`);
      assert.equal(response.headers['content-security-policy'], ordinary.headers['content-security-policy'], url);
      assert.match(String(response.headers['x-request-id']), /^req_/, url);
    }
    for (const url of [`/developers/webhooks/${long}/test`, `/developers/api-keys/${long}/revoke`]) {
      const response = await client.post(url, {});
      assert.equal(response.statusCode, 404, `POST ${url}`);
      assert.match(String(response.headers['content-type']), /^text\/html/);
    }
    const badUrl = await client.get('/developers/calls/%zz');
    assert.equal(badUrl.statusCode, 400);
    assert.match(String(badUrl.headers['content-type']), /^text\/html/);
    assert.match(badUrl.body, /This address is malformed/);
    // Without a session every portal URL, refused by the router or not, leads to the sign-in page.
    for (const url of ['/developers/nothing-here', `/developers/calls/${long}`]) {
      const anonymous = await t.inject({ method: 'GET', url });
      assert.equal(anonymous.statusCode, 303, url);
      assert.equal(anonymous.headers.location, `/developers/sign-in?next=${encodeURIComponent(url)}`);
    }
    const apiLong = await t.inject({ method: 'GET', url: `/v1/calls/${long}`, headers: { authorization: `Bearer ${t.seed.token}` } });
    assert.equal(apiLong.statusCode, 404);
    assert.equal(apiLong.json().error, 'not_found');
    const form = await t.inject({
      method: 'POST',
      url: '/v1/calls',
      headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'agent_id=x',
    });
    assert.equal(form.statusCode, 415);
    assert.equal(form.json().error, 'unsupported_media_type');
    const css = await client.get('/developers/assets/portal.css');
    assert.equal(css.statusCode, 200);
    assert.match(String(css.headers['content-type']), /^text\/css/);
  });
});
