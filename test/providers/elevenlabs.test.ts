/**
 * The ElevenLabs provider through the real app, against a local fake of their API: the outbound-call
 * requests it sends, how every failure is answered, the post-call webhooks (signature, a SIP failure end
 * to end, duplicates, unknown and ignored kinds), and that neither the API key, the webhook secret nor our
 * API token is ever logged. What every provider shares (test keys, each outcome end to end to a signed
 * call.* event, lost answers, agents sync) is in the provider contract (provider-contract.test.ts).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { signElevenLabs } from '../../src/features/providers/elevenlabs/elevenlabs.signature.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import type { Dialect } from '../support/test-database.js';
import { startFakeElevenLabs, type FakeElevenLabs, type FakeReply } from '../support/fake-elevenlabs.js';
import { countCalls, startTestApp, type TestApp } from '../support/test-app.js';
import { callFailedEventFields, startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import {
  addElevenLabsAgents,
  apiKey,
  elevenLabsEnv,
  eventsOf,
  initiationFailureEvent,
  nowSeconds,
  placeCall,
  postWebhook,
  providerInternals,
  providerTimeoutMs,
  readCall,
  sendSignedWebhook,
  transcriptionEvent,
  webhookSecret,
  workspaceNumbers,
} from '../support/elevenlabs-fixtures.js';
import { memoryLogs } from '../support/memory-logs.js';
import { waitUntil } from '../support/wait.js';

interface ErrorCase {
  readonly name: string;
  readonly reply: FakeReply;
  readonly status: number;
  readonly error: string;
  readonly message?: RegExp;
  readonly retryAfter?: string | RegExp;
  /** The call may have been placed (no answer, a 5xx, a dropped or unreadable answer): the key stays held. */
  readonly lost?: boolean;
}

const errorBody = (_status: number, code: string) => ({
  detail: { type: 'error', code, message: `${providerInternals} key=${apiKey}`, status: code, request_id: 'req_provider_internal' },
});

const errorCases: ErrorCase[] = [
  {
    name: '422 validation error (a list of fields)',
    reply: { status: 422, body: { detail: [{ loc: ['body', 'to_number'], msg: `Field required ${providerInternals}`, type: 'missing' }] } },
    status: 502,
    error: 'provider_error',
    message: /rejected the call request as invalid \(to\)/,
  },
  {
    name: '400 in the general error envelope',
    reply: { status: 400, body: errorBody(400, 'invalid_parameters') },
    status: 502,
    error: 'provider_error',
    message: /invalid/,
  },
  {
    name: '401 invalid_api_key',
    reply: { status: 401, body: errorBody(401, 'invalid_api_key') },
    status: 502,
    error: 'provider_error',
    message: /credentials/,
  },
  { name: '403', reply: { status: 403, body: errorBody(403, 'forbidden') }, status: 502, error: 'provider_error', message: /credentials/ },
  {
    name: '404',
    reply: { status: 404, body: errorBody(404, 'not_found') },
    status: 502,
    error: 'provider_error',
    message: /does not know/,
  },
  {
    name: '409 (any other 4xx)',
    reply: { status: 409, body: errorBody(409, 'conflict') },
    status: 502,
    error: 'provider_error',
    message: /HTTP 409/,
  },
  {
    name: '429 with Retry-After',
    reply: { status: 429, body: errorBody(429, 'rate_limit_exceeded'), headers: { 'retry-after': '7' } },
    status: 503,
    error: 'provider_unavailable',
    retryAfter: '7',
  },
  {
    name: '429 concurrent_limit_exceeded without Retry-After',
    reply: { status: 429, body: errorBody(429, 'concurrent_limit_exceeded') },
    status: 503,
    error: 'provider_unavailable',
    retryAfter: /^[1-9]\d*$/,
  },
  { lost: true, name: '500', reply: { status: 500, body: errorBody(500, 'internal_error') }, status: 503, error: 'provider_unavailable' },
  {
    lost: true,
    name: '502 with an HTML page',
    reply: { status: 502, body: `<html>${providerInternals}</html>`, headers: { 'content-type': 'text/html' } },
    status: 503,
    error: 'provider_unavailable',
  },
  { lost: true, name: '503', reply: { status: 503, body: errorBody(503, 'system_busy') }, status: 503, error: 'provider_unavailable' },
  {
    lost: true,
    name: 'a dropped connection',
    reply: { status: 200, destroy: true },
    status: 503,
    error: 'provider_unavailable',
    message: /dropped after the request was sent/,
  },
  {
    lost: true,
    name: 'an answer slower than the timeout',
    reply: { status: 200, delayMs: providerTimeoutMs + 1_500, body: { success: true, conversation_id: 'conv_late' } },
    status: 504,
    error: 'provider_timeout',
  },
  {
    name: '200 with success:false',
    reply: { status: 200, body: { success: false, message: providerInternals, conversation_id: null, callSid: null } },
    status: 502,
    error: 'provider_error',
  },
  {
    lost: true,
    name: '200 without conversation_id',
    reply: { status: 200, body: { success: true, message: 'ok', callSid: 'CA1' } },
    status: 503,
    error: 'provider_unavailable',
    message: /may or may not have been placed/,
  },
  {
    lost: true,
    name: '200 with conversation_id null',
    reply: { status: 200, body: { success: true, conversation_id: null } },
    status: 503,
    error: 'provider_unavailable',
    message: /may or may not have been placed/,
  },
  {
    lost: true,
    name: '200 with a body that is not JSON',
    reply: { status: 200, body: 'OK' },
    status: 503,
    error: 'provider_unavailable',
    message: /may or may not have been placed/,
  },
];

const logs = memoryLogs();
let fake: FakeElevenLabs;
let t: TestApp;
let receiver: WebhookReceiver;
let endpointSecret: string;
/** Every API token and endpoint secret of the apps below, none of which may be logged. */
const secretsOfApps: string[] = [];

/** Each part below starts an app of its own (all logging to `logs`), a fake ElevenLabs and a receiver. */
function withElevenLabs(dialect: Dialect): void {
  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    fake.phoneNumbers = structuredClone(workspaceNumbers);
    t = await startTestApp(dialect, {
      env: elevenLabsEnv(fake),
      startWorker: true,
      overrides: { logger: logs.logger, monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 },
    });
    await addElevenLabsAgents(t);
    receiver = await startWebhookReceiver();
    endpointSecret = (await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url }))
      .secret;
    secretsOfApps.push(t.seed.token, endpointSecret);
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
    await fake?.close();
  });
}

/** The verified call.* envelope delivered for a call, once it arrived. */
async function deliveredFor(callId: string): Promise<Record<string, any>> {
  let found: Record<string, any> | undefined;
  await waitUntil(() => {
    for (const hook of receiver.received) {
      const payload = verifyWebhook(hook, endpointSecret);
      if (payload.data?.id === callId) found = payload;
    }
    return found !== undefined;
  }, `delivery for ${callId}`);
  return found!;
}

await forEachDialect('ElevenLabs provider: placing calls and their errors', (dialect) => {
  withElevenLabs(dialect);

  describe('placing calls', () => {
    it('Twilio number: POST twilio/outbound-call with xi-api-key and the metadata as dynamic_variables', async () => {
      const before = fake.requests.length;
      const metadata = { customer_name: 'Ada', appointment_time: '14:00', attempt: 2, vip: true, note: null };
      const res = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123', metadata });
      assert.equal(res.statusCode, 201, res.body);
      const sent = fake.requests.slice(before);
      assert.equal(sent.length, 1);
      const request = sent[0]!;
      // The dial id travels as user_id and as a dynamic variable, so a lost answer can be found again.
      const dialId = (request.body as { conversation_initiation_client_data: { user_id: string } }).conversation_initiation_client_data
        .user_id;
      assert.match(dialId, /^dial_[0-9a-z]{26}$/);
      assert.equal(request.method, 'POST');
      assert.equal(request.path, '/v1/convai/twilio/outbound-call');
      assert.equal(request.headers['xi-api-key'], apiKey);
      assert.match(String(request.headers['content-type']), /^application\/json/);
      assert.equal(request.headers.authorization, undefined, 'our bearer token must not travel to the provider');
      assert.deepEqual(request.body, {
        agent_id: 'agent_el_twilio',
        agent_phone_number_id: 'phnum_twilio_1',
        to_number: '+14155550123',
        conversation_initiation_client_data: {
          user_id: dialId,
          dynamic_variables: { ...metadata, callgate_dial_id: dialId },
        },
      });
      const conversationId = [...fake.conversations.keys()].at(-1)!;
      const created = res.json();
      assert.equal(created.id, `call_${conversationId}`);
      assert.equal(created.status, 'initiated');
      assert.equal(res.headers.location, `/v1/calls/${created.id}`);
      const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.equal(row.provider, 'elevenlabs');
      assert.equal(row.provider_conversation_id, conversationId);
      assert.equal(row.mode, 'live');
    });

    it('SIP-trunk number: POST sip-trunk/outbound-call, with only the dial id as client data without metadata', async () => {
      for (const metadata of [undefined, {}]) {
        const before = fake.requests.length;
        const { conversationId } = await placeCall(t, 'agent_el_sip', metadata === undefined ? {} : { metadata });
        const sent = fake.requests.slice(before);
        assert.equal(sent.length, 1);
        assert.equal(sent[0]!.path, '/v1/convai/sip-trunk/outbound-call');
        assert.equal(sent[0]!.headers['xi-api-key'], apiKey);
        const dialId = fake.conversations.get(conversationId)!.user_id;
        assert.deepEqual(sent[0]!.body, {
          agent_id: 'agent_el_sip',
          agent_phone_number_id: 'phnum_sip_1',
          to_number: '+14155550123',
          conversation_initiation_client_data: { user_id: dialId, dynamic_variables: { callgate_dial_id: dialId } },
        });
        assert.ok(fake.conversations.has(conversationId));
      }
    });

    it("an agent whose number's kind is unknown has it looked up once in GET phone-numbers", async () => {
      const before = fake.requests.length;
      await placeCall(t, 'agent_el_lookup');
      await placeCall(t, 'agent_el_lookup');
      const sent = fake.requests.slice(before);
      assert.deepEqual(
        sent.map((request) => `${request.method} ${request.path}`),
        ['GET /v1/convai/phone-numbers', 'POST /v1/convai/sip-trunk/outbound-call', 'POST /v1/convai/sip-trunk/outbound-call'],
      );
      assert.equal(sent[0]!.headers['xi-api-key'], apiKey);
      assert.equal((sent[1]!.body as Record<string, unknown>).agent_phone_number_id, 'phnum_sip_2');
    });

    it('a number that is unknown, missing or of a kind without outbound calls, or a reserved system__ metadata key, is refused with 502 and no call', async () => {
      const cases: [string, RegExp, Record<string, unknown>?][] = [
        ['agent_el_unknown_number', /does not know the agent's phone number/],
        ['agent_el_no_number', /no phone number/],
        ['agent_el_exotel', /exotel/],
        ['agent_el_twilio', /"system__caller_id" .*reserves the system__ prefix/, { name: 'Ada', system__caller_id: '+1' }],
      ];
      for (const [agentId, message, metadata] of cases) {
        const calls = await countCalls(t.services);
        const before = fake.requestsTo('outbound').length;
        const res = await t.createCall({ agent_id: agentId, to: '+14155550123', ...(metadata ? { metadata } : {}) });
        assert.equal(res.statusCode, 502, res.body);
        assert.equal(res.json().error, 'provider_error');
        assert.match(res.json().message, message);
        assert.equal(fake.requestsTo('outbound').length, before, 'no outbound call was attempted');
        assert.equal(await countCalls(t.services), calls);
      }
    });

    it('a failing phone-number lookup answers 503 and places no call', async () => {
      // The number is not among the listed ones, so it is looked up again (the cache holds listed numbers only).
      fake.queue('phoneNumbers', { status: 500, body: errorBody(500, 'internal_error') });
      const before = fake.requestsTo('outbound').length;
      const res = await t.createCall({ agent_id: 'agent_el_unknown_number', to: '+14155550123' });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().error, 'provider_unavailable');
      assert.ok(!res.body.includes(providerInternals));
      assert.equal(fake.requestsTo('outbound').length, before);
    });
  });

  describe('errors of the outbound call', () => {
    for (const [index, errorCase] of errorCases.entries()) {
      if (errorCase.lost) continue;
      it(`${errorCase.name} → ${errorCase.status} ${errorCase.error}; nothing stored, key released, no retry`, async () => {
        const idempotencyKey = `el-error-${dialect}-${index}`;
        const calls = await countCalls(t.services);
        const before = fake.requestsTo('outbound').length;
        fake.queue('outbound', errorCase.reply);
        const res = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123' }, { idempotencyKey });
        assert.equal(res.statusCode, errorCase.status, res.body);
        const body = res.json();
        assert.equal(body.error, errorCase.error);
        assert.match(body.request_id, /^req_/);
        assert.ok(body.message.length > 10);
        if (errorCase.message) assert.match(body.message, errorCase.message);
        for (const secretText of [providerInternals, 'INTERNAL-TRACE', apiKey, 'req_provider_internal', 'Field required']) {
          assert.ok(!res.body.includes(secretText), `the answer leaks ${secretText}: ${res.body}`);
        }
        if (errorCase.retryAfter !== undefined) {
          if (typeof errorCase.retryAfter === 'string') assert.equal(res.headers['retry-after'], errorCase.retryAfter);
          else assert.match(String(res.headers['retry-after']), errorCase.retryAfter);
        }
        assert.equal(fake.requestsTo('outbound').length, before + 1, 'callgate never retries the outbound call itself');
        assert.equal(await countCalls(t.services), calls, 'no call is stored');
        const held = await t.services.db.selectFrom('idempotency_keys').selectAll().where('idempotency_key', '=', idempotencyKey).execute();
        assert.equal(held.length, 0, 'the Idempotency-Key is released');

        // The released key works for a clean retry.
        const retry = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123' }, { idempotencyKey });
        assert.equal(retry.statusCode, 201, retry.body);
        assert.equal(fake.requestsTo('outbound').length, before + 2);
      });
    }

    for (const [index, errorCase] of errorCases.entries()) {
      if (!errorCase.lost) continue;
      it(`${errorCase.name} → ${errorCase.status} ${errorCase.error} with Retry-After; the call may exist, so the key stays held and a retry dials nothing`, async () => {
        const idempotencyKey = `el-lost-${dialect}-${index}`;
        const calls = await countCalls(t.services);
        const before = fake.requestsTo('outbound').length;
        fake.queue('outbound', errorCase.reply);
        const res = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123' }, { idempotencyKey });
        assert.equal(res.statusCode, errorCase.status, res.body);
        const body = res.json();
        assert.equal(body.error, errorCase.error);
        assert.match(body.message, /checking with the provider whether the call was placed/);
        assert.match(String(res.headers['retry-after']), /^\d+$/);
        for (const secretText of [providerInternals, 'INTERNAL-TRACE', apiKey, 'req_provider_internal']) {
          assert.ok(!res.body.includes(secretText), `the answer leaks ${secretText}: ${res.body}`);
        }
        const held = await t.services.db.selectFrom('idempotency_keys').selectAll().where('idempotency_key', '=', idempotencyKey).execute();
        assert.equal(held.length, 1, 'the Idempotency-Key stays held');
        assert.equal(held[0]!.state, 'in_progress');

        // A retry while the dial is checked gets the same answer at once, and nothing is dialed.
        const retry = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123' }, { idempotencyKey });
        assert.equal(retry.statusCode, errorCase.status, retry.body);
        assert.equal(retry.json().error, errorCase.error);
        assert.match(String(retry.headers['retry-after']), /^\d+$/);
        assert.equal(fake.requestsTo('outbound').length, before + 1, 'callgate never dials a lost dial again');
        assert.equal(await countCalls(t.services), calls, 'no call is stored until one is found');
      });
    }

    it('an unreachable ElevenLabs → 503 provider_unavailable, nothing stored', async () => {
      const calls = await countCalls(t.services);
      await fake.stop();
      try {
        const res = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155550123' }, { idempotencyKey: `el-down-${dialect}` });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.json().error, 'provider_unavailable');
        assert.match(res.json().message, /could not be reached/);
      } finally {
        await fake.restart();
      }
      assert.equal(await countCalls(t.services), calls);
      const held = await t.services.db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('idempotency_key', '=', `el-down-${dialect}`)
        .execute();
      assert.equal(held.length, 0);
    });
  });
});

await forEachDialect('ElevenLabs post-call webhooks: signature, outcomes, duplicates and ignored kinds', (dialect) => {
  withElevenLabs(dialect);

  it('checks ElevenLabs-Signature: wrong secret, tampered body, stale, far-future, missing and malformed are refused with 401', async () => {
    const { id, conversationId } = await placeCall(t, 'agent_el_twilio');
    const now = nowSeconds(t);
    const body = JSON.stringify(transcriptionEvent(conversationId, { startSecs: now - 60, durationSecs: 48, summary: 'Confirmed.' }));
    const tampered = body.replace('"call_duration_secs":48', '"call_duration_secs":4800');
    assert.notEqual(tampered, body);
    const refusals: [string, string | undefined, string, RegExp][] = [
      ['wrong secret', signElevenLabs('wsec_not_the_secret', now, body), body, /invalid/],
      ['tampered body', signElevenLabs(webhookSecret, now, body), tampered, /invalid/],
      ['stale timestamp (31 minutes)', signElevenLabs(webhookSecret, now - 31 * 60, body), body, /too old/],
      ['timestamp 31 minutes ahead', signElevenLabs(webhookSecret, now + 31 * 60, body), body, /ahead of this server's clock/],
      ['missing header', undefined, body, /missing/],
      ['malformed header', 'v0=deadbeef', body, /invalid/],
      ['signature of another timestamp', signElevenLabs(webhookSecret, now - 1, body).replace(`t=${now - 1}`, `t=${now}`), body, /invalid/],
    ];
    for (const [name, signature, sent, message] of refusals) {
      const res = await postWebhook(t, sent, signature);
      assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
      assert.equal(res.json().error, 'unauthorized', name);
      assert.match(res.json().message, message, name);
    }
    assert.equal((await readCall(t, id)).status, 'initiated');
    assert.equal((await eventsOf(t, id)).length, 0);

    // 29 minutes old is still within their 30-minute tolerance.
    const accepted = await postWebhook(t, body, signElevenLabs(webhookSecret, now - 29 * 60, body));
    assert.equal(accepted.statusCode, 200, accepted.body);
    assert.deepEqual(accepted.json(), { received: true, handling: 'recorded' });
  });

  // Each failure_reason over Twilio, end to end, is in the provider contract (provider-contract.test.ts).
  it('call_initiation_failure no-answer with SIP metadata → a signed call.failed no_answer, their SIP internals left out', async () => {
    const { id, conversationId } = await placeCall(t, 'agent_el_sip');
    const eventSecs = nowSeconds(t) - 3;
    const res = await sendSignedWebhook(t, initiationFailureEvent(conversationId, 'no-answer', 'sip', eventSecs));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().handling, 'recorded');
    const payload = await deliveredFor(id);
    assert.equal(payload.type, 'call.failed');
    assert.deepEqual(Object.keys(payload.data).sort(), callFailedEventFields);
    assert.equal(payload.data.status, 'failed');
    assert.equal(payload.data.failure_reason, 'no_answer');
    assert.equal(typeof payload.data.failure_message, 'string');
    assert.equal(payload.data.failed_at, new Date(eventSecs * 1000).toISOString());
    assert.ok(!JSON.stringify(payload).includes('INVITE failed'), 'their SIP internals stay out of our event');
    assert.equal((await readCall(t, id)).failure_reason, 'no_answer');
  });

  it('a webhook delivered twice, one after the other or at once, makes one outcome and one event', async () => {
    const sequential = await placeCall(t, 'agent_el_twilio');
    const concurrent = await placeCall(t, 'agent_el_twilio');
    const event = (conversationId: string) =>
      transcriptionEvent(conversationId, { startSecs: nowSeconds(t) - 90, durationSecs: 30, summary: 'Done.' });

    const first = await sendSignedWebhook(t, event(sequential.conversationId));
    const second = await sendSignedWebhook(t, event(sequential.conversationId));
    assert.deepEqual([first.statusCode, second.statusCode], [200, 200]);
    assert.deepEqual([first.json().handling, second.json().handling], ['recorded', 'duplicate']);
    // A failure report after the completion changes nothing either.
    const late = await sendSignedWebhook(t, initiationFailureEvent(sequential.conversationId, 'busy', 'twilio', nowSeconds(t)));
    assert.equal(late.json().handling, 'duplicate');

    const body = event(concurrent.conversationId);
    const both = await Promise.all([sendSignedWebhook(t, body), sendSignedWebhook(t, body)]);
    assert.deepEqual(
      both.map((res) => res.statusCode),
      [200, 200],
    );
    assert.deepEqual(both.map((res) => res.json().handling).sort(), ['duplicate', 'recorded']);

    await deliveredFor(sequential.id);
    await deliveredFor(concurrent.id);
    await sleep(150);
    for (const { id } of [sequential, concurrent]) {
      const events = await eventsOf(t, id);
      assert.deepEqual(
        events.map((e) => e.type),
        ['call.completed'],
      );
      const hooks = receiver.received.filter((hook) => hook.body.includes(`"id":"${id}"`));
      assert.equal(hooks.length, 1, `one delivery for ${id}`);
      assert.equal((await readCall(t, id)).status, 'completed');
    }
  });

  it('a webhook for a conversation not stored (or of a simulator call) is acknowledged with 200, held rather than dropped, and logged with its request id', async () => {
    const cases: [unknown, string][] = [
      [transcriptionEvent('conv_never_placed_here', { startSecs: nowSeconds(t) - 60, durationSecs: 10, summary: 'x' }), 'held'],
      [initiationFailureEvent('conv_never_placed_there', 'busy', 'sip', nowSeconds(t)), 'held'],
      [{ type: 'post_call_transcription', event_timestamp: nowSeconds(t), data: {} }, 'unknown_conversation'],
    ];
    for (const [payload, handling] of cases) {
      const res = await sendSignedWebhook(t, payload);
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.json().handling, handling);
      // Logged under the request's id, so that an operator can find the request it came with.
      const requestId = res.headers['x-request-id'];
      assert.ok(
        logs.lines.some((line) => line.includes(`"reqId":"${requestId}"`) && /not stored yet|without a usable conversation_id/.test(line)),
        `no log line of request ${requestId} about the conversation`,
      );
    }
    const held = await t.services.db.selectFrom('held_outcomes').select('conversation_id').orderBy('conversation_id').execute();
    assert.deepEqual(
      held.map((row) => row.conversation_id),
      ['conv_never_placed_here', 'conv_never_placed_there'],
    );
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    const simulated = await t.createCall({ agent_id: t.seed.agentId, to: '+14155550123' }, { token: key.token });
    const conversationId = (simulated.json().id as string).slice('call_'.length);
    const res = await sendSignedWebhook(t, initiationFailureEvent(conversationId, 'busy', 'twilio', nowSeconds(t)));
    assert.equal(res.json().handling, 'held', 'an ElevenLabs report never ends a simulator call');
    const call = await t.services.db
      .selectFrom('calls')
      .select('failure_reason')
      .where('id', '=', simulated.json().id)
      .executeTakeFirstOrThrow();
    assert.notEqual(call.failure_reason, 'busy');
  });

  it('post_call_audio and other types are acknowledged and ignored', async () => {
    const { id, conversationId } = await placeCall(t, 'agent_el_twilio');
    const audio = {
      type: 'post_call_audio',
      event_timestamp: nowSeconds(t),
      data: { agent_id: 'agent_el_twilio', conversation_id: conversationId, full_audio: Buffer.alloc(150_000, 7).toString('base64') },
    };
    const other = { type: 'some_future_type', event_timestamp: nowSeconds(t), data: { conversation_id: conversationId } };
    for (const payload of [audio, other]) {
      const res = await sendSignedWebhook(t, payload);
      assert.equal(res.statusCode, 200, res.body.slice(0, 200));
      assert.deepEqual(res.json(), { received: true, handling: 'ignored' });
    }
    assert.equal((await readCall(t, id)).status, 'initiated');
    assert.equal((await eventsOf(t, id)).length, 0);
  });
});

await forEachDialect('ElevenLabs post-call webhooks: bodies as they come over the wire, and the logs', (dialect) => {
  withElevenLabs(dialect);

  it('post_call_audio of several MB, sent chunked over a real connection as ElevenLabs does, is acknowledged', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { conversationId } = await placeCall(t, 'agent_el_twilio');
    const body = JSON.stringify({
      type: 'post_call_audio',
      event_timestamp: nowSeconds(t),
      data: {
        agent_id: 'agent_el_twilio',
        conversation_id: conversationId,
        full_audio: Buffer.alloc(3 * 1024 * 1024, 1).toString('base64'),
      },
    });
    const signature = signElevenLabs(webhookSecret, nowSeconds(t), body);
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = http.request(
        `${address}/providers/elevenlabs/webhook`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'elevenlabs-signature': signature, 'transfer-encoding': 'chunked' },
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        },
      );
      request.on('error', reject);
      for (let offset = 0; offset < body.length; offset += 256 * 1024) request.write(body.slice(offset, offset + 256 * 1024));
      request.end();
    });
    assert.equal(answer.status, 200, answer.text.slice(0, 200));
    assert.deepEqual(JSON.parse(answer.text), { received: true, handling: 'ignored' });
  });

  it('a correctly signed body that is not JSON is refused with 400 invalid_json', async () => {
    const body = '{"type": "post_call_transcription",';
    const res = await postWebhook(t, body, signElevenLabs(webhookSecret, nowSeconds(t), body));
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json().error, 'invalid_json');
  });

  it('a correctly signed body nested deeper than 64 levels is refused with 400 before any parse, and the call stays as it was', async () => {
    const { id, conversationId } = await placeCall(t, 'agent_el_twilio');
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
    const body = `{"type":"post_call_transcription","event_timestamp":${nowSeconds(t)},"data":{"conversation_id":"${conversationId}","deep":${deep}}}`;
    const res = await postWebhook(t, body, signElevenLabs(webhookSecret, nowSeconds(t), body));
    assert.equal(res.statusCode, 400, res.body.slice(0, 200));
    assert.equal(res.json().error, 'invalid_request');
    assert.match(res.json().message, /nested deeper than 64 levels/);
    assert.equal((await readCall(t, id)).status, 'initiated');
  });

  it('signed values beyond what a call can be are replaced with a warning: the call completes with sane times, duration and summary', async () => {
    const now = nowSeconds(t);
    const cases: { name: string; event: (conversationId: string) => Record<string, any>; duration: number; field: string }[] = [
      {
        name: 'event_timestamp, start and duration of 1e300',
        event: (id) => ({
          ...transcriptionEvent(id, { startSecs: 1e300, durationSecs: 1e300, summary: 'Far.' }),
          event_timestamp: 1e300,
        }),
        duration: 24 * 60 * 60,
        field: 'metadata.call_duration_secs',
      },
      {
        name: 'event_timestamp -1e20',
        event: (id) => ({
          ...transcriptionEvent(id, { startSecs: now - 60, durationSecs: 30, summary: 'Past.' }),
          event_timestamp: -1e20,
        }),
        duration: 30,
        field: 'event_timestamp',
      },
      {
        name: 'call_duration_secs 3e9 (beyond a 32-bit integer)',
        event: (id) => transcriptionEvent(id, { startSecs: now - 60, durationSecs: 3e9, summary: 'Long.' }),
        duration: 24 * 60 * 60,
        field: 'metadata.call_duration_secs',
      },
      {
        name: 'call_duration_secs -5',
        event: (id) => transcriptionEvent(id, { startSecs: now - 60, durationSecs: -5, summary: 'Negative.' }),
        duration: 0,
        field: 'metadata.call_duration_secs',
      },
      {
        name: 'a transcript_summary with U+0000',
        event: (id) => transcriptionEvent(id, { startSecs: now - 60, durationSecs: 12, summary: 'Con\u0000firmed.' }),
        duration: 12,
        field: 'analysis.transcript_summary',
      },
    ];
    for (const testCase of cases) {
      const { id, conversationId } = await placeCall(t, 'agent_el_twilio');
      const linesBefore = logs.lines.length;
      const res = await sendSignedWebhook(t, testCase.event(conversationId));
      assert.equal(res.statusCode, 200, `${testCase.name}: ${res.body}`);
      assert.deepEqual(res.json(), { received: true, handling: 'recorded' }, testCase.name);
      const call = await readCall(t, id);
      assert.equal(call.status, 'completed', testCase.name);
      assert.equal(call.duration_seconds, testCase.duration, testCase.name);
      const started = Date.parse(call.started_at);
      const ended = Date.parse(call.ended_at);
      assert.ok(Math.abs(started / 1000 - now) < 2 * 24 * 60 * 60, `${testCase.name}: started_at ${call.started_at}`);
      assert.equal(ended - started, testCase.duration * 1000, testCase.name);
      assert.doesNotMatch(call.transcript_summary, /\u0000/, testCase.name);
      const warnings = logs.lines.slice(linesBefore).filter((line) => line.includes('value out of range'));
      assert.ok(
        warnings.some((line) => (JSON.parse(line) as { field: string }).field === testCase.field),
        `${testCase.name}: ${warnings.join('')}`,
      );
      assert.ok(
        warnings.every((line) => (JSON.parse(line) as { level: number }).level === 40),
        testCase.name,
      );
      await deliveredFor(id);
    }
  });

  it('a body is not read before the signature header is: none or a malformed one is 401, one over 10 MB is 413, before the body is sent', async () => {
    if (!t.app.server.listening) await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as net.AddressInfo;
    /** Sends only the request head, announcing `length` bytes of body, and reads the answer that comes anyway. */
    const headOnly = (headers: Record<string, string>, length: number) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let text = '';
        const timer = setTimeout(() => socket.destroy(new Error('no answer to the request head within 5 s')), 5_000);
        socket.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
        socket.on('data', (chunk: Buffer) => {
          text += chunk.toString('utf8');
          const split = text.indexOf('\r\n\r\n');
          const declared = /content-length: (\d+)/i.exec(text.slice(0, split));
          if (split < 0 || !declared || text.length - split - 4 < Number(declared[1])) return;
          clearTimeout(timer);
          socket.destroy();
          resolve({ status: Number(text.split(' ')[1]), body: text.slice(split + 4) });
        });
        const head = Object.entries({
          host: 'localhost',
          'content-type': 'application/json',
          'content-length': String(length),
          ...headers,
        })
          .map(([name, value]) => `${name}: ${value}\r\n`)
          .join('');
        socket.write(`POST /providers/elevenlabs/webhook HTTP/1.1\r\n${head}\r\n`);
      });
    const sixtyMb = 60 * 1024 * 1024;
    const missing = await headOnly({}, sixtyMb);
    assert.equal(missing.status, 401, missing.body);
    assert.match(JSON.parse(missing.body).message, /missing/);
    const malformed = await headOnly({ 'elevenlabs-signature': 't=abc,v0=zz' }, sixtyMb);
    assert.equal(malformed.status, 401, malformed.body);
    assert.equal(JSON.parse(malformed.body).error, 'unauthorized');
    const wellFormed = signElevenLabs(webhookSecret, nowSeconds(t), 'any body');
    const tooLarge = await headOnly({ 'elevenlabs-signature': wellFormed }, 10 * 1024 * 1024 + 1);
    assert.equal(tooLarge.status, 413, tooLarge.body);
    assert.equal(JSON.parse(tooLarge.body).error, 'payload_too_large');
    assert.match(JSON.parse(tooLarge.body).message, /larger than 10 MB/);
  });

  it('nothing logged contains the ElevenLabs API key, the webhook secret or our API token', async () => {
    // Make sure this run logged what it went through: requests, refused webhooks, unknown conversations.
    const text = logs.text();
    assert.ok(logs.lines.length > 50, `only ${logs.lines.length} log lines`);
    assert.match(text, /ElevenLabs webhook refused/);
    assert.match(text, /not stored yet/);
    assert.match(text, /provider_timeout|provider_unavailable|provider_error/);
    for (const [name, secretText] of [
      ['ELEVENLABS_API_KEY', apiKey],
      ['ELEVENLABS_WEBHOOK_SECRET', webhookSecret],
      ...secretsOfApps.map((secret) => ['API token or endpoint secret', secret] as const),
    ] as const) {
      assert.ok(!text.includes(secretText), `${name} appears in the logs`);
    }
  });
});
