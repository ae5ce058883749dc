/**
 * The events API on SQLite and PostgreSQL through the real app with the worker running: GET /v1/events and
 * GET /v1/events/{id} answer exactly the envelopes a webhook receiver got (verified with standardwebhooks,
 * byte for byte), newest first in cursor pages, filtered by type and created_after, within the key's
 * account and mode only, for 30 days; unknown or foreign ids are 404, bad parameters 400 with `param`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { sendTestEvent } from '../../src/features/webhook-delivery/fan-out.service.js';
import { createEndpoint, getEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { apiGet, createBatch } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, verifyWebhook, type ReceivedWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

const dayMs = 24 * 60 * 60 * 1000;

await forEachDialect('Events API', (dialect) => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let secret: string;
  let otherSecret: string;
  let testToken: string;
  let other: SeededAccount;
  /** Every webhook received, verified: the event id → its raw body and parsed payload. */
  const hooks = new Map<string, { body: string; payload: Record<string, any> }>();
  /** The live key's events, newest first, as the receiver got them. */
  let liveIds: string[] = [];
  let testIds: string[] = [];

  const get = (url: string, token = t.seed.token) => apiGet(t, url, token);

  function record(received: readonly ReceivedWebhook[]): void {
    for (const hook of received) {
      const payload = verifyWebhook(hook, hook.body.includes(other.agentId) ? otherSecret : secret);
      hooks.set(payload.id, { body: hook.body, payload });
    }
  }

  before(async () => {
    t = await startTestApp(dialect, {
      startWorker: true,
      overrides: { monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20, dialerSweepIntervalMs: 50 },
    });
    const { db, clock } = t.services;
    receiver = await startWebhookReceiver();
    secret = (await createEndpoint(db, clock, true, { accountId: t.seed.accountId, url: receiver.url })).secret;
    // The test key's events go to a test endpoint of their own (signed with the same secret here, for brevity).
    const testEndpoint = await createEndpoint(db, clock, true, { accountId: t.seed.accountId, url: receiver.url, mode: 'test' });
    await db.updateTable('webhook_endpoints').set({ secret }).where('id', '=', testEndpoint.id).execute();
    testToken = (await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'test key', mode: 'test' })).token;
    other = await t.newAccount({ agentId: 'agent_other' });
    otherSecret = (await createEndpoint(db, clock, true, { accountId: other.accountId, url: receiver.url })).secret;

    // Live: two completed calls and a busy one; test: a call and a one-recipient batch (call + batch.completed).
    // The other account's call goes to the same receiver (its own endpoint). Made one after another, so the
    // events' creation order is known.
    for (const to of ['+14155550101', simulatorMagicNumbers.busy, '+14155550102']) {
      assert.equal((await t.createCall(callBody(t, { to }))).statusCode, 201);
      await receiver.waitFor(hooks.size + 1);
      record(receiver.received);
    }
    assert.equal((await t.createCall(callBody(t, { to: '+14155550103' }), { token: testToken })).statusCode, 201);
    await receiver.waitFor(4);
    await createBatch(t, ['+14155550104'], {}, { token: testToken });
    await receiver.waitFor(6);
    assert.equal((await t.createCall({ agent_id: other.agentId, to: '+14155550105' }, { token: other.token })).statusCode, 201);
    await receiver.waitFor(7);
    record(receiver.received);
    const byCreation = [...hooks.values()].sort((a, b) =>
      a.payload.created_at === b.payload.created_at
        ? a.payload.id < b.payload.id
          ? 1
          : -1
        : a.payload.created_at < b.payload.created_at
          ? 1
          : -1,
    );
    const callsOf = async (token: string) =>
      new Set(((await get('/v1/calls?limit=100', token)).json().data as { id: string }[]).map((call) => call.id));
    const [liveCalls, testCalls] = [await callsOf(t.seed.token), await callsOf(testToken)];
    liveIds = byCreation.filter((hook) => liveCalls.has(hook.payload.data.id)).map((hook) => hook.payload.id);
    testIds = byCreation
      .filter((hook) => testCalls.has(hook.payload.data.id) || hook.payload.type === 'batch.completed')
      .map((hook) => hook.payload.id);
    assert.equal(liveIds.length, 3);
    assert.equal(testIds.length, 3);
  });
  after(async () => {
    await receiver.close();
    await t.close();
  });

  describe('the envelopes', () => {
    it('GET /v1/events lists the live key its events newest first, each equal to the verified webhook', async () => {
      const res = await get('/v1/events');
      assert.equal(res.statusCode, 200, res.body);
      assert.match(String(res.headers['content-type']), /^application\/json/);
      assert.ok(res.headers.ratelimit, 'rate-limited like every /v1 route');
      const page = res.json();
      assert.equal(page.has_more, false);
      assert.deepEqual(
        page.data.map((event: { id: string }) => event.id),
        liveIds,
      );
      for (const event of page.data) assert.deepEqual(event, hooks.get(event.id)!.payload);
      // The list holds the very bytes that were signed and sent.
      assert.equal(res.body, `{"data":[${liveIds.map((id) => hooks.get(id)!.body).join(',')}],"has_more":false}`);
      assert.deepEqual(page.data.map((event: { type: string }) => event.type).sort(), ['call.completed', 'call.completed', 'call.failed']);
    });

    it('GET /v1/events/{id} answers the body the receiver got, byte for byte', async () => {
      const reads: [string, string][] = [
        ...liveIds.map((id): [string, string] => [id, t.seed.token]),
        ...testIds.map((id): [string, string] => [id, testToken]),
      ];
      for (const [id, token] of reads) {
        const res = await get(`/v1/events/${id}`, token);
        assert.equal(res.statusCode, 200, res.body);
        assert.equal(res.body, hooks.get(id)!.body);
      }
    });

    it('a test-mode key sees its calls and batches only, batch.completed included', async () => {
      const page = (await get('/v1/events', testToken)).json();
      assert.deepEqual(
        page.data.map((event: { id: string }) => event.id),
        testIds,
      );
      assert.equal(page.data[0].type, 'batch.completed');
    });

    it('requests are logged like every /v1 route', async () => {
      const res = await get('/v1/events?limit=1');
      await t.services.requestLog.flush();
      const row = await t.services.db
        .selectFrom('request_logs')
        .selectAll()
        .where('id', '=', String(res.headers['x-request-id']))
        .executeTakeFirst();
      assert.equal(row?.path, '/v1/events?limit=1');
      assert.equal(row?.status, 200);
    });

    it('without a key: 401', async () => {
      const res = await t.inject({ method: 'GET', url: '/v1/events' });
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().error, 'unauthorized');
    });
  });

  describe('pages and filters', () => {
    it('pages with limit and starting_after until has_more is false', async () => {
      const first = (await get('/v1/events?limit=2')).json();
      assert.deepEqual([first.data.map((e: { id: string }) => e.id), first.has_more], [liveIds.slice(0, 2), true]);
      const second = (await get(`/v1/events?limit=2&starting_after=${first.data[1].id}`)).json();
      assert.deepEqual([second.data.map((e: { id: string }) => e.id), second.has_more], [liveIds.slice(2), false]);
      const empty = (await get(`/v1/events?starting_after=${liveIds[2]}`)).json();
      assert.deepEqual(empty, { data: [], has_more: false });
    });

    it('type keeps the events of that type', async () => {
      const failed = (await get('/v1/events?type=call.failed')).json();
      assert.deepEqual(
        failed.data.map((e: { type: string }) => e.type),
        ['call.failed'],
      );
      assert.deepEqual((await get('/v1/events?type=batch.completed')).json(), { data: [], has_more: false });
      assert.equal((await get('/v1/events?type=batch.completed', testToken)).json().data.length, 1);
    });

    it('created_after keeps the events created after that time (any ISO 8601 offset)', async () => {
      const oldest = hooks.get(liveIds[2]!)!.payload.created_at as string;
      const res = (await get(`/v1/events?created_after=${encodeURIComponent(oldest)}`)).json();
      assert.deepEqual(
        res.data.map((e: { id: string }) => e.id),
        liveIds.filter((id) => hooks.get(id)!.payload.created_at > oldest),
      );
      const before = new Date(Date.parse(oldest) - 60_000);
      const shifted = `${new Date(before.getTime() + 2 * 3600_000).toISOString().slice(0, 19)}+02:00`;
      assert.equal((await get(`/v1/events?created_after=${encodeURIComponent(shifted)}`)).json().data.length, 3);
    });

    for (const [query, param] of [
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['type=call.started', 'type'],
      ['type=webhook.test', 'type'],
      ['created_after=yesterday', 'created_after'],
      ['created_after=2026-02-30T00:00:00Z', 'created_after'],
      ['created_after=2026-01-01T00:00:00', 'created_after'],
      ['starting_after=evt_unknown', 'starting_after'],
      ['colour=blue', 'colour'],
    ] as const) {
      it(`?${query}: 400 invalid_request with param ${param}`, async () => {
        const res = await get(`/v1/events?${query}`);
        assert.equal(res.statusCode, 400, res.body);
        assert.deepEqual([res.json().error, res.json().param], ['invalid_request', param]);
        assert.match(res.json().request_id, /^req_/);
      });
    }

    it("created_after with its offset's + sent unencoded (read as a space): the 400 says to send %2B", async () => {
      const res = await get('/v1/events?created_after=2026-11-24T09:00:00+01:00');
      assert.deepEqual([res.statusCode, res.json().error, res.json().param], [400, 'invalid_request', 'created_after']);
      assert.match(res.json().message, /%2B/);
      // Any other bad value keeps the general wording.
      assert.doesNotMatch((await get('/v1/events?created_after=2026-11-24T09:00:00')).json().message, /%2B/);
      assert.doesNotMatch((await get('/v1/events?created_after=soon+01:00')).json().message, /%2B/);
    });

    it("another mode's or account's event is no cursor: 400", async () => {
      for (const [id, token] of [
        [testIds[0], t.seed.token],
        [liveIds[0], testToken],
        [liveIds[0], other.token],
      ] as const) {
        const res = await get(`/v1/events?starting_after=${id}`, token);
        assert.deepEqual([res.statusCode, res.json().param], [400, 'starting_after']);
      }
    });
  });

  describe('isolation and retention', () => {
    it("another mode's, another account's or an unknown event is 404 not_found", async () => {
      const otherEvent = (await get('/v1/events', other.token)).json().data;
      assert.equal(otherEvent.length, 1, 'the other account sees its own event only');
      for (const [id, token] of [
        [testIds[0], t.seed.token],
        [liveIds[0], testToken],
        [liveIds[0], other.token],
        [otherEvent[0].id, t.seed.token],
        ['evt_01aaaaaaaaaaaaaaaaaaaaaaaa', t.seed.token],
        ['%00', t.seed.token],
      ] as const) {
        const res = await get(`/v1/events/${id}`, token);
        assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
        assert.equal(res.json().error, 'not_found');
      }
      assert.equal(
        (await t.inject({ method: 'DELETE', url: `/v1/events/${liveIds[0]}`, headers: { authorization: `Bearer ${t.seed.token}` } }))
          .statusCode,
        405,
      );
    });

    it('a webhook.test event is in no mode: neither key lists nor reads it', async () => {
      const created = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
      const endpoint = await getEndpoint(t.services.db, created.id);
      const { eventId } = await sendTestEvent(t.services.db, t.services.clock, endpoint!);
      for (const token of [t.seed.token, testToken]) {
        assert.equal((await get(`/v1/events/${eventId}`, token)).statusCode, 404);
        assert.ok(!(await get('/v1/events?limit=100', token)).json().data.some((e: { id: string }) => e.id === eventId));
      }
    });

    it('an event older than 30 days is neither listed nor read', async () => {
      const oldId = liveIds[2]!;
      const row = await t.services.db.selectFrom('webhook_events').select('created_at').where('id', '=', oldId).executeTakeFirstOrThrow();
      const aged = new Date(Date.now() - 30 * dayMs - 60_000).toISOString();
      await t.services.db.updateTable('webhook_events').set({ created_at: aged }).where('id', '=', oldId).execute();
      try {
        assert.equal((await get(`/v1/events/${oldId}`)).statusCode, 404);
        assert.deepEqual(
          (await get('/v1/events')).json().data.map((e: { id: string }) => e.id),
          liveIds.slice(0, 2),
        );
      } finally {
        await t.services.db.updateTable('webhook_events').set({ created_at: row.created_at }).where('id', '=', oldId).execute();
      }
    });
  });
});
