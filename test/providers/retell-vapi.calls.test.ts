/**
 * Retell and Vapi through the real app, against local fakes of their APIs: the create requests callgate
 * sends (fields, auth, dial id, metadata as variables), how every failure is answered (the same map as for
 * ElevenLabs), a concurrency refusal, and that their keys never reach an answer or a log. Test-mode keys are
 * in the provider contract (provider-contract.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import type { FakeProviderReply } from '../support/fake-provider-server.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import { memoryLogs } from '../support/memory-logs.js';
import {
  addRetellVapiAgents,
  fillWorkspaces,
  placeCall,
  providerTimeoutMs,
  retellAgentId,
  retellKey,
  retellNumber,
  retellVapiEnv,
  vapiAssistantId,
  vapiKey,
  vapiNumberId,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { countCalls, startTestApp, type TestApp } from '../support/test-app.js';

const internals = 'INTERNAL-TRACE-5512 at pod-7';

interface ErrorCase {
  readonly name: string;
  readonly reply: FakeProviderReply;
  readonly status: number;
  readonly error: string;
  readonly message?: RegExp;
}

const retellError = (status: number) => ({ status, body: { status: 'error', message: `${internals} key=${retellKey}` } });
const vapiError = (status: number, error: string) => ({
  status,
  body: { message: [`${internals} ${vapiKey}`], error, statusCode: status },
});

const casesOf = (error: (status: number) => FakeProviderReply, createdBody: unknown): ErrorCase[] => [
  { name: '400', reply: error(400), status: 502, error: 'provider_error', message: /invalid/ },
  { name: '401', reply: error(401), status: 502, error: 'provider_error', message: /credentials/ },
  { name: '402', reply: error(402), status: 502, error: 'provider_error', message: /cannot pay/ },
  { name: '429', reply: { ...error(429), headers: { 'retry-after': '9' } }, status: 503, error: 'provider_unavailable' },
  { name: '500', reply: error(500), status: 503, error: 'provider_unavailable', message: /may or may not have been placed/ },
  { name: 'a dropped connection', reply: { status: 201, destroy: true }, status: 503, error: 'provider_unavailable' },
  {
    name: 'an answer slower than the timeout',
    reply: { status: 201, delayMs: providerTimeoutMs + 1_500, body: createdBody },
    status: 504,
    error: 'provider_timeout',
  },
  { name: '201 without an id', reply: { status: 201, body: { status: 'ok' } }, status: 503, error: 'provider_unavailable' },
];

const providers = [
  {
    name: 'Retell',
    agentId: 'agent_rt',
    route: 'create' as const,
    cases: [
      ...casesOf(retellError, { call_id: 'call_late', call_status: 'registered' }),
      { name: '422 unknown asset', reply: retellError(422), status: 502, error: 'provider_error', message: /does not know/ },
    ],
  },
  {
    name: 'Vapi',
    agentId: 'agent_vp',
    route: 'create' as const,
    cases: [
      ...casesOf((status) => vapiError(status, 'Bad Request'), { id: 'late', status: 'queued' }),
      { name: '404', reply: vapiError(404, 'Not Found'), status: 502, error: 'provider_error', message: /does not know/ },
    ],
  },
];

await forEachDialect('Retell and Vapi: placing calls and their errors', (dialect) => {
  const logs = memoryLogs();
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let t: TestApp;

  before(async () => {
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    fillWorkspaces(retell, vapi);
    t = await startTestApp(dialect, { env: retellVapiEnv(retell, vapi), overrides: { logger: logs.logger } });
    await addRetellVapiAgents(t);
  });
  after(async () => {
    await t?.close();
    await retell?.close();
    await vapi?.close();
  });

  describe('create requests', () => {
    it('Retell: POST /v2/create-phone-call from the agent number, metadata as string variables, the dial id in metadata', async () => {
      const before = retell.requests.length;
      const metadata = { customer_name: 'Ada', attempt: 2, vip: true, ratio: 0.5, note: null };
      const { id, providerId } = await placeCall(t, 'agent_rt', { metadata });
      const sent = retell.requests.slice(before);
      assert.equal(sent.length, 1);
      const request = sent[0]!;
      assert.equal(`${request.method} ${request.path}`, 'POST /v2/create-phone-call');
      assert.equal(request.headers.authorization, `Bearer ${retellKey}`);
      const body = request.body as Record<string, any>;
      const dialId = body.metadata.callgate_dial_id;
      assert.match(dialId, /^dial_[0-9a-z]{26}$/);
      assert.deepEqual(body, {
        from_number: retellNumber,
        to_number: '+14155550123',
        override_agent_id: retellAgentId,
        retell_llm_dynamic_variables: {
          customer_name: 'Ada',
          attempt: '2',
          vip: 'true',
          ratio: '0.5',
          note: '',
          callgate_dial_id: dialId,
        },
        metadata: { callgate_dial_id: dialId },
      });
      assert.equal(id, `call_${providerId}`);
      assert.ok(retell.calls.has(providerId));
      const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual([row.provider, row.provider_conversation_id, row.agent_id], ['retell', providerId, 'agent_rt']);
    });

    it('Vapi: POST /call with the assistant and number, metadata as variableValues, the dial id as externalId and metadata', async () => {
      const before = vapi.requests.length;
      const metadata = { customer_name: 'Ada', attempt: 2, vip: true, note: null };
      const { id, providerId } = await placeCall(t, 'agent_vp', { metadata });
      const sent = vapi.requests.slice(before);
      assert.equal(sent.length, 1);
      const request = sent[0]!;
      assert.equal(`${request.method} ${request.path}`, 'POST /call');
      assert.equal(request.headers.authorization, `Bearer ${vapiKey}`);
      const body = request.body as Record<string, any>;
      const dialId = body.customer.externalId;
      assert.match(dialId, /^dial_[0-9a-z]{26}$/);
      assert.deepEqual(body, {
        assistantId: vapiAssistantId,
        phoneNumberId: vapiNumberId,
        customer: { number: '+14155550123', externalId: dialId },
        assistantOverrides: { variableValues: { ...metadata, callgate_dial_id: dialId }, metadata: { callgate_dial_id: dialId } },
      });
      assert.equal(id, `call_${providerId}`);
      assert.ok(vapi.calls.has(providerId));
      const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual([row.provider, row.provider_conversation_id], ['vapi', providerId]);
    });

    it('Vapi at its concurrency limit (concurrencyBlocked) → 503 provider_unavailable with Retry-After, nothing stored', async () => {
      vapi.concurrencyBlocked = true;
      try {
        const calls = await countCalls(t.services);
        const res = await t.createCall({ agent_id: 'agent_vp', to: '+14155550123' });
        assert.equal(res.statusCode, 503, res.body);
        assert.equal(res.json().error, 'provider_unavailable');
        assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
        assert.equal(await countCalls(t.services), calls);
      } finally {
        vapi.concurrencyBlocked = false;
      }
    });

    it('Retell answering a create with a concurrency_limit_reached call → 503 provider_unavailable, nothing stored', async () => {
      retell.queue('create', {
        status: 201,
        body: { call_id: 'call_refused1', call_status: 'error', disconnection_reason: 'concurrency_limit_reached' },
      });
      const calls = await countCalls(t.services);
      const res = await t.createCall({ agent_id: 'agent_rt', to: '+14155550123' });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(await countCalls(t.services), calls);
    });
  });

  for (const provider of providers) {
    describe(`errors of a ${provider.name} create`, () => {
      for (const [index, errorCase] of provider.cases.entries()) {
        it(`${errorCase.name} → ${errorCase.status} ${errorCase.error}; nothing stored, no retry, no key in the answer`, async () => {
          const fake = provider.name === 'Retell' ? retell : vapi;
          const calls = await countCalls(t.services);
          const before = fake.requestsTo('create').length;
          fake.queue('create', errorCase.reply);
          const res = await t.createCall(
            { agent_id: provider.agentId, to: '+14155550123' },
            { idempotencyKey: `${provider.name}-${dialect}-${index}` },
          );
          assert.equal(res.statusCode, errorCase.status, res.body);
          assert.equal(res.json().error, errorCase.error);
          if (errorCase.message) assert.match(res.json().message, errorCase.message);
          for (const secret of [internals, retellKey, vapiKey]) assert.ok(!res.body.includes(secret), `the answer leaks ${secret}`);
          if (errorCase.reply.status === 429) assert.equal(res.headers['retry-after'], '9');
          assert.equal(fake.requestsTo('create').length, before + 1, 'callgate never retries a create itself');
          assert.equal(await countCalls(t.services), calls);
        });
      }
    });
  }

  it('unreachable providers answer 503 provider_unavailable; no key appears in any log line', async () => {
    for (const [fake, agentId] of [
      [retell, 'agent_rt'],
      [vapi, 'agent_vp'],
    ] as const) {
      await fake.stop();
      try {
        const res = await t.createCall({ agent_id: agentId, to: '+14155550123' });
        assert.equal(res.statusCode, 503, res.body);
        assert.match(res.json().message, /could not be reached/);
      } finally {
        await fake.restart();
      }
    }
    assert.ok(logs.lines.length > 10);
    for (const secret of [retellKey, vapiKey, vapiSecret]) assert.ok(!logs.text().includes(secret), 'a provider key was logged');
  });
});
