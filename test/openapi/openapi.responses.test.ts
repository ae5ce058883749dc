/**
 * Drives every operation of the OpenAPI document through its answers (success, 400, 401, 403, 404, 409, 413,
 * 415, 429, 502, 503, 504) on both databases, with the response check of every test app (test/support/openapi-check.ts)
 * comparing each answer with the documented schema of its status: no mismatch, and every operation seen.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { RateLimitDecision, RateLimiter } from '../../src/features/rate-limit/rate-limit.interface.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { apiGet, apiPost, createBatch, postApi, recipientsFor } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import { createFakeProvider, failures } from '../support/fake-voice-provider.js';
import { operationsOf } from '../support/openapi-check.js';
import { deleteSuppression, postSuppression } from '../support/suppression-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { recordOutcome } from '../../src/features/calls/calls.service.js';
import { err } from '../../src/lib/result.js';

/** A per-key limiter the test switches to refusing, so every operation can be seen answering 429. */
function switchableLimiter(): RateLimiter & { refusing: boolean } {
  const decision = (allowed: boolean): RateLimitDecision => ({
    allowed,
    limit: 600,
    remaining: allowed ? 599 : 0,
    resetSeconds: 30,
    windowSeconds: 60,
  });
  const limiter = {
    refusing: false,
    consume: async () => decision(!limiter.refusing),
    peek: async () => decision(true),
    refund: async () => undefined,
  };
  return limiter;
}

/** A request to an operation whose path parameters are filled with values that exist nowhere. */
function requestOf(operation: string, token: string | null) {
  const [method, path] = operation.split(' ') as [string, string];
  const url = path.replace('{id}', 'x_unknown').replace('{to}', encodeURIComponent('+14155550999'));
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  return { method: method as 'GET', url, headers };
}

function expectStatus(res: LightMyRequestResponse, status: number, code?: string): void {
  assert.equal(res.statusCode, status, res.body);
  if (code !== undefined) assert.equal(res.json().error, code);
}

await forEachDialect('Every operation answers as the OpenAPI document says', (dialect) => {
  let t: TestApp;
  let operations: string[];
  const limiter = switchableLimiter();

  before(async () => {
    t = await startTestApp(dialect, { startMonitor: true, overrides: { perKeyLimiter: limiter, monitorSweepIntervalMs: 20 } });
    operations = operationsOf((await t.inject({ method: 'GET', url: '/v1/openapi.json' })).json());
  });
  after(() => t?.close());

  it('answers 401 without a key and 429 over the rate limit on every operation', async () => {
    for (const operation of operations) {
      expectStatus(await t.inject(requestOf(operation, null)), 401, 'unauthorized');
    }
    limiter.refusing = true;
    try {
      for (const operation of operations) {
        const res = await t.inject(requestOf(operation, t.seed.token));
        expectStatus(res, 429, 'rate_limit_exceeded');
        assert.ok(res.headers['retry-after']);
      }
    } finally {
      limiter.refusing = false;
    }
  });

  it('calls: 201, replay, 400, 403, 404, 409, 413, 415, 502', async () => {
    const created = await t.createCall(callBody(t), { idempotencyKey: 'oa-call-1' });
    expectStatus(created, 201);
    const replay = await t.createCall(callBody(t), { idempotencyKey: 'oa-call-1' });
    expectStatus(replay, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    expectStatus(await t.createCall(callBody(t, { to: '+14155550124' }), { idempotencyKey: 'oa-call-1' }), 409, 'idempotency_conflict');
    expectStatus(await t.createCall(callBody(t), { idempotencyKey: 'not valid' }), 400, 'invalid_idempotency_key');
    expectStatus(await t.createCall({ agent_id: t.seed.agentId, to: '555' }), 400, 'invalid_request');
    expectStatus(await t.createCall('{"agent_id":'), 400, 'invalid_json');
    expectStatus(await t.createCall(callBody(t, { agent_id: 'agent_nobody' })), 403, 'agent_not_found');
    expectStatus(await t.createCall(callBody(t, { to: simulatorMagicNumbers.refused })), 502, 'provider_error');
    expectStatus(await t.createCall(callBody(t), { headers: { 'content-type': 'text/plain' } }), 415, 'unsupported_media_type');
    expectStatus(await t.createCall(callBody(t, { metadata: { note: 'x'.repeat(70 * 1024) } })), 413, 'payload_too_large');
    expectStatus(await postSuppression(t, { to: '+14155550777' }), 201);
    expectStatus(await t.createCall(callBody(t, { to: '+14155550777' })), 403, 'number_suppressed');
    // One call that fails, for a call.failed event below.
    expectStatus(await t.createCall(callBody(t, { to: simulatorMagicNumbers.busy })), 201);

    expectStatus(await apiGet(t, '/v1/calls?limit=2'), 200);
    expectStatus(await apiGet(t, '/v1/calls?limit=0'), 400, 'invalid_request');
    expectStatus(await apiGet(t, `/v1/calls/${created.json().id}`), 200);
    expectStatus(await apiGet(t, '/v1/calls/call_unknown'), 404, 'not_found');

    // What the call kept: 409 before its end, then its transcript and recording; none for a failed call.
    const pending = await t.createCall(callBody(t));
    expectStatus(await apiGet(t, `/v1/calls/${pending.json().id}/transcript`), 409, 'call_not_ended');
    expectStatus(await apiGet(t, `/v1/calls/${pending.json().id}/recording`), 409, 'call_not_ended');
    const id = created.json().id as string;
    await eventually('the call to end', async () =>
      (await apiGet(t, `/v1/calls/${id}`)).json().status === 'completed' ? true : undefined,
    );
    expectStatus(await apiGet(t, `/v1/calls/${id}/transcript`), 200);
    expectStatus(await apiGet(t, `/v1/calls/${id}/recording`), 200);
    expectStatus(await apiGet(t, '/v1/calls/call_unknown/transcript'), 404, 'not_found');
    expectStatus(await apiGet(t, '/v1/calls/call_unknown/recording'), 404, 'not_found');
    expectStatus(await apiPost(t, `/v1/calls/${id}/cancel`), 409, 'call_already_ended');
    expectStatus(await apiPost(t, '/v1/calls/call_unknown/cancel'), 404, 'not_found');
    const busy = (await t.createCall(callBody(t, { to: simulatorMagicNumbers.busy }))).json().id as string;
    await eventually('the busy call to end', async () =>
      (await apiGet(t, `/v1/calls/${busy}`)).json().status === 'failed' ? true : undefined,
    );
    expectStatus(await apiGet(t, `/v1/calls/${busy}/recording`), 404, 'recording_not_available');
  });

  it('calls: 503 and 504 when the provider is down or does not answer', async () => {
    const fake = createFakeProvider();
    fake.steps = [{ failure: failures.unavailable }, { failure: failures.timeout }];
    const other = await startTestApp(dialect, { overrides: { providers: createProviderRegistry({ simulator: fake }) } });
    try {
      expectStatus(await other.createCall(callBody(other)), 503, 'provider_unavailable');
      expectStatus(await other.createCall(callBody(other)), 504, 'provider_timeout');
      // A recording its provider cannot serve now: 503 with Retry-After. Before its end, its cancel: the fake's
      // calls never end by themselves, so the 202 is certain.
      const placed = (await other.createCall(callBody(other))).json().id as string;
      expectStatus(await apiPost(other, `/v1/calls/${placed}/cancel`), 202);
      const endedAt = new Date();
      await recordOutcome(other.services.db, other.services.clock, placed, {
        status: 'completed',
        startedAt: endedAt,
        endedAt,
        durationSeconds: 0,
        transcriptSummary: '',
        content: { analysis: null, turns: null, recording: { kind: 'provider' } },
      });
      fake.fetchRecording = async () => err(failures.unavailable);
      const unavailable = await apiGet(other, `/v1/calls/${placed}/recording`);
      expectStatus(unavailable, 503, 'provider_unavailable');
      assert.match(String(unavailable.headers['retry-after']), /^[1-9][0-9]*$/);
      for (const seen of other.responseCheck.seen) t.responseCheck.seen.add(seen);
    } finally {
      // Fails here if an answer did not match the document.
      await other.close();
    }
  });

  it('batches: 201, 200, 400, 403, 404, 409', async () => {
    const later = new Date(Date.now() + 24 * 3600_000).toISOString();
    const body = { agent_id: t.seed.agentId, recipients: recipientsFor(['+14155551001', '+14155551002']), scheduled_at: later };
    expectStatus(await postApi(t, '/v1/batches', body, { idempotencyKey: 'oa-batch-1' }), 201);
    expectStatus(
      await postApi(t, '/v1/batches', { ...body, name: 'other' }, { idempotencyKey: 'oa-batch-1' }),
      409,
      'idempotency_conflict',
    );
    expectStatus(await postApi(t, '/v1/batches', { ...body, recipients: [] }), 400, 'invalid_request');
    expectStatus(await postApi(t, '/v1/batches', { ...body, agent_id: 'agent_nobody' }), 403, 'agent_not_found');
    const batch = await createBatch(t, ['+14155551003'], { scheduled_at: later, name: 'Reminders' });

    expectStatus(await apiGet(t, '/v1/batches'), 200);
    expectStatus(await apiGet(t, '/v1/batches?status=nope'), 400, 'invalid_request');
    expectStatus(await apiGet(t, `/v1/batches/${batch.id}`), 200);
    expectStatus(await apiGet(t, '/v1/batches/batch_unknown'), 404, 'not_found');
    expectStatus(await apiGet(t, `/v1/batches/${batch.id}/recipients`), 200);
    expectStatus(await apiGet(t, `/v1/batches/${batch.id}/recipients?limit=500`), 400, 'invalid_request');
    expectStatus(await apiGet(t, '/v1/batches/batch_unknown/recipients'), 404, 'not_found');
    expectStatus(await apiPost(t, `/v1/batches/${batch.id}/pause`), 200);
    expectStatus(await apiPost(t, `/v1/batches/${batch.id}/resume`), 200);
    // Nothing was dialed, so the cancelled batch ends at once (and its batch.completed is written).
    expectStatus(await apiPost(t, `/v1/batches/${batch.id}/cancel`), 200);
    expectStatus(await apiPost(t, `/v1/batches/${batch.id}/pause`), 409, 'batch_finished');
    expectStatus(await apiPost(t, `/v1/batches/${batch.id}/resume`), 409, 'batch_not_resumable');
    for (const action of ['pause', 'resume', 'cancel']) {
      expectStatus(await apiPost(t, `/v1/batches/batch_unknown/${action}`), 404, 'not_found');
    }
  });

  it('suppressions: 201, 200, 204, 400, 404, 409', async () => {
    expectStatus(await postSuppression(t, { to: '+14155550888', reason: 'asked' }, { idempotencyKey: 'oa-sup-1' }), 201);
    expectStatus(await postSuppression(t, { to: '+14155550889' }, { idempotencyKey: 'oa-sup-1' }), 409, 'idempotency_conflict');
    expectStatus(await postSuppression(t, { to: '+14155550888' }), 200);
    expectStatus(await postSuppression(t, { to: 'nope' }), 400, 'invalid_request');
    expectStatus(await apiGet(t, '/v1/suppressions'), 200);
    expectStatus(await apiGet(t, '/v1/suppressions?limit=x'), 400, 'invalid_request');
    expectStatus(await apiGet(t, `/v1/suppressions/${encodeURIComponent('+14155550888')}`), 200);
    expectStatus(await apiGet(t, '/v1/suppressions/nope'), 400, 'invalid_request');
    expectStatus(await apiGet(t, `/v1/suppressions/${encodeURIComponent('+14155550111')}`), 404, 'not_found');
    expectStatus(await deleteSuppression(t, '+14155550888'), 204);
    expectStatus(await deleteSuppression(t, '+14155550888'), 404, 'not_found');
  });

  it('webhook endpoints: 201, replay, 200, 204, 400, 404, 409', async () => {
    const path = '/v1/webhook_endpoints';
    const body = { url: 'https://example.com/oa-hooks', enabled_events: ['call.completed'], description: 'OpenAPI' };
    const created = await postApi(t, path, body, { idempotencyKey: 'oa-we-1' });
    expectStatus(created, 201);
    const replay = await postApi(t, path, body, { idempotencyKey: 'oa-we-1' });
    expectStatus(replay, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    expectStatus(await postApi(t, path, { ...body, description: 'other' }, { idempotencyKey: 'oa-we-1' }), 409, 'idempotency_conflict');
    expectStatus(await postApi(t, path, { ...body, enabled_events: ['call.nope'] }), 400, 'invalid_request');
    const id = created.json().id as string;
    const send = (method: 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
      t.inject({
        method,
        url,
        headers: { authorization: `Bearer ${t.seed.token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
      });
    expectStatus(await apiGet(t, `${path}?url=${encodeURIComponent(body.url)}`), 200);
    expectStatus(await apiGet(t, `${path}?limit=0`), 400, 'invalid_request');
    expectStatus(await apiGet(t, `${path}/${id}`), 200);
    expectStatus(await apiGet(t, `${path}/we_unknown`), 404, 'not_found');
    expectStatus(await send('PATCH', `${path}/${id}`, { disabled: true }), 200);
    expectStatus(await send('PATCH', `${path}/${id}`, {}), 400, 'invalid_request');
    expectStatus(await send('PATCH', `${path}/we_unknown`, { disabled: false }), 404, 'not_found');
    expectStatus(await apiPost(t, `${path}/${id}/rotate_secret`), 200);
    expectStatus(await apiPost(t, `${path}/we_unknown/rotate_secret`), 404, 'not_found');
    expectStatus(await send('DELETE', `${path}/${id}`), 204);
    expectStatus(await send('DELETE', `${path}/${id}`), 404, 'not_found');
  });

  it('agents: 200, 400, 404', async () => {
    expectStatus(await apiGet(t, '/v1/agents'), 200);
    expectStatus(await apiGet(t, '/v1/agents?limit=0'), 400, 'invalid_request');
    expectStatus(await apiGet(t, `/v1/agents/${t.seed.agentId}`), 200);
    expectStatus(await apiGet(t, '/v1/agents/agent_unknown'), 404, 'not_found');
  });

  it('events: 200 for each type of event, 400, 404', async () => {
    const types = ['call.completed', 'call.failed', 'batch.completed'];
    const events = await eventually('an event of each type', async () => {
      const page = (await apiGet(t, '/v1/events?limit=100')).json() as { data: { id: string; type: string }[] };
      return types.every((type) => page.data.some((event) => event.type === type)) ? page.data : undefined;
    });
    for (const type of types) expectStatus(await apiGet(t, `/v1/events/${events.find((event) => event.type === type)!.id}`), 200);
    expectStatus(await apiGet(t, '/v1/events?type=call.completed'), 200);
    expectStatus(await apiGet(t, '/v1/events?created_after=yesterday'), 400, 'invalid_request');
    expectStatus(await apiGet(t, '/v1/events/evt_unknown'), 404, 'not_found');
  });

  it('matched the document with every answer, and saw every operation succeed', () => {
    assert.deepEqual(t.responseCheck.mismatches, []);
    const succeeded = operations.filter((operation) =>
      [...t.responseCheck.seen].some((seen) => new RegExp(`^${operation.replace(/[{}?]/g, '\\$&')} 2\\d\\d$`).test(seen)),
    );
    assert.deepEqual(
      operations.filter((operation) => !succeeded.includes(operation)),
      [],
    );
    const statuses = new Set([...t.responseCheck.seen].map((seen) => Number(seen.split(' ').at(-1))));
    assert.deepEqual([...statuses].sort(), [200, 201, 202, 204, 400, 401, 403, 404, 409, 413, 415, 429, 502, 503, 504]);
  });
});
