/**
 * Shared pieces of the ElevenLabs tests: test credentials, the environment that points callgate at the
 * fake, ElevenLabs agents in the seed account, signed provider webhooks built from the documented payloads,
 * and small readers of calls and events.
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { signElevenLabs } from '../../src/features/providers/elevenlabs/elevenlabs.signature.js';
import type { FakeAgent, FakeElevenLabs, FakePhoneNumber } from './fake-elevenlabs.js';
import type { TestApp } from './test-app.js';

export const apiKey = 'sk_test_elevenlabs_9d3c1f7a2b6e4085a1c3';
export const webhookSecret = 'wsec_test_elevenlabs_5e8b2a914c7d3f60';
/** Put into every error body of the fake: it must never reach our answers. */
export const providerInternals = 'INTERNAL-TRACE-7731 at worker-pool-3';

/** Short enough for a quick timeout test, long enough that a loaded machine never times out by accident. */
export const providerTimeoutMs = 1_000;

export function elevenLabsEnv(fake: FakeElevenLabs, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ELEVENLABS_API_KEY: apiKey,
    ELEVENLABS_WEBHOOK_SECRET: webhookSecret,
    ELEVENLABS_BASE_URL: fake.url,
    CALLGATE_PROVIDER_TIMEOUT_MS: String(providerTimeoutMs),
    CALLGATE_RECONCILE_AFTER: '10m',
    ...extra,
  };
}

/** Agents of a workspace as GET /v1/convai/agents lists them: `agent_remote_1` named `Remote 1`, and so on. */
export function workspaceAgents(count: number): FakeAgent[] {
  return Array.from({ length: count }, (_, i) => ({ agent_id: `agent_remote_${i + 1}`, name: `Remote ${i + 1}` }));
}

/** A number of the workspace as GET /v1/convai/phone-numbers lists it, assigned to `agent` or to none. */
export function workspaceNumber(
  provider: FakePhoneNumber['provider'],
  id: string,
  number: string,
  label: string,
  agent: FakeAgent | null = null,
): FakePhoneNumber {
  return {
    provider,
    phone_number_id: id,
    phone_number: number,
    label,
    assigned_agent: agent && { agent_id: agent.agent_id, agent_name: agent.name },
  };
}

/** The workspace's numbers as GET /v1/convai/phone-numbers lists them. */
export const workspaceNumbers: FakePhoneNumber[] = [
  workspaceNumber('twilio', 'phnum_twilio_1', '+14155550100', 'Main'),
  workspaceNumber('sip_trunk', 'phnum_sip_1', '+493012345670', 'PBX'),
  workspaceNumber('sip_trunk', 'phnum_sip_2', '+493012345671', 'PBX 2'),
  workspaceNumber('exotel', 'phnum_exotel_1', '+912212345678', 'Exotel'),
];

/** ElevenLabs agents in the seed account: one per way of knowing the number's kind. */
export async function addElevenLabsAgents(t: TestApp): Promise<void> {
  const agents: [string, string | null, string | null][] = [
    ['agent_el_twilio', 'phnum_twilio_1', 'twilio'],
    ['agent_el_sip', 'phnum_sip_1', 'sip_trunk'],
    ['agent_el_lookup', 'phnum_sip_2', null],
    ['agent_el_unknown_number', 'phnum_missing', null],
    ['agent_el_no_number', null, null],
    ['agent_el_exotel', 'phnum_exotel_1', 'exotel'],
  ];
  for (const [agentId, phoneNumberId, phoneNumberProvider] of agents) {
    await upsertAgent(t.services.db, t.services.clock, {
      accountId: t.seed.accountId,
      agentId,
      name: agentId,
      provider: 'elevenlabs',
      phoneNumberId,
      phoneNumberProvider,
    });
  }
}

/** An ElevenLabs agent in the seed account, with a test-mode and a live key. */
export async function createAgentsAndKeyForMode(t: TestApp): Promise<{ agentId: string; testToken: string; liveToken: string }> {
  const { db, clock } = t.services;
  const { agent } = await upsertAgent(db, clock, {
    accountId: t.seed.accountId,
    agentId: 'agent_elevenlabs_real',
    name: 'Real agent',
    provider: 'elevenlabs',
    phoneNumberId: 'phnum_123',
  });
  const testKey = await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
  const liveKey = await createApiKey(db, clock, { accountId: t.seed.accountId, name: 'live', mode: 'live' });
  return { agentId: agent.agent_id, testToken: testKey.token, liveToken: liveKey.token };
}

export function nowSeconds(t: TestApp): number {
  return Math.floor(t.services.clock.now().getTime() / 1000);
}

/** POST /providers/elevenlabs/webhook with the given raw body and signature header (none when undefined). */
export function postWebhook(
  t: TestApp,
  body: string,
  signature: string | undefined,
  contentType = 'application/json',
): Promise<LightMyRequestResponse> {
  return t.inject({
    method: 'POST',
    url: '/providers/elevenlabs/webhook',
    headers: { 'content-type': contentType, ...(signature === undefined ? {} : { 'elevenlabs-signature': signature }) },
    payload: body,
  });
}

/** Signs with the configured secret at the app's current time, as ElevenLabs would. */
export function sendSignedWebhook(t: TestApp, payload: unknown): Promise<LightMyRequestResponse> {
  const body = JSON.stringify(payload);
  return postWebhook(t, body, signElevenLabs(webhookSecret, nowSeconds(t), body));
}

/** A `post_call_transcription` event as documented (section 4). */
export function transcriptionEvent(
  conversationId: string,
  options: { startSecs: number; durationSecs: number; summary: string; eventSecs?: number },
): Record<string, unknown> {
  return {
    type: 'post_call_transcription',
    event_timestamp: options.eventSecs ?? options.startSecs + options.durationSecs + 5,
    data: {
      agent_id: 'agent_el_twilio',
      conversation_id: conversationId,
      status: 'done',
      user_id: 'lead-42',
      transcript: [
        {
          role: 'agent',
          message: 'Hi Ada, this is a reminder.',
          time_in_call_secs: 0,
          tool_calls: null,
          tool_results: null,
          feedback: null,
          conversation_turn_metrics: null,
        },
        { role: 'user', message: 'Hello?', time_in_call_secs: 3 },
      ],
      metadata: {
        start_time_unix_secs: options.startSecs,
        call_duration_secs: options.durationSecs,
        cost: 310,
        termination_reason: 'Call ended by remote party',
        phone_call: {
          type: 'twilio',
          direction: 'outbound',
          phone_number_id: 'phnum_twilio_1',
          agent_number: '+14155550100',
          external_number: '+14155550123',
          call_sid: 'CA123',
          stream_sid: 'MZ123',
        },
      },
      analysis: {
        call_successful: 'success',
        transcript_summary: options.summary,
        evaluation_criteria_results: {},
        data_collection_results: {},
      },
      conversation_initiation_client_data: {
        dynamic_variables: { customer_name: 'Ada' },
        conversation_config_override: {},
        custom_llm_extra_body: {},
      },
      has_audio: true,
      has_user_audio: true,
      has_response_audio: true,
    },
  };
}

/** A `call_initiation_failure` event as documented, with Twilio's or the SIP metadata. */
export function initiationFailureEvent(
  conversationId: string,
  failureReason: string,
  kind: 'twilio' | 'sip',
  eventSecs: number,
): Record<string, unknown> {
  const metadata =
    kind === 'twilio'
      ? {
          type: 'twilio',
          body: {
            CallSid: 'CA999',
            CallStatus: failureReason === 'busy' ? 'busy' : 'no-answer',
            SipResponseCode: '486',
            To: '+14155550123',
            From: '+14155550100',
            Direction: 'outbound-api',
            Duration: '0',
            AccountSid: 'AC1',
          },
        }
      : {
          type: 'sip',
          body: {
            sip_status_code: 480,
            error_reason: 'INVITE failed: temporarily unavailable',
            call_sid: 'sip-1',
            sip_status: 'Temporarily Unavailable',
          },
        };
  return {
    type: 'call_initiation_failure',
    event_timestamp: eventSecs,
    data: { agent_id: 'agent_el_twilio', conversation_id: conversationId, failure_reason: failureReason, metadata },
  };
}

/** Places a call through POST /v1/calls and returns its id and the conversation id behind it. */
export async function placeCall(
  t: TestApp,
  agentId: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; conversationId: string }> {
  const res = await t.createCall({ agent_id: agentId, to: '+14155550123', ...extra });
  assert.equal(res.statusCode, 201, res.body);
  const id = res.json().id as string;
  assert.match(id, /^call_/);
  return { id, conversationId: id.slice('call_'.length) };
}

export async function readCall(t: TestApp, id: string): Promise<Record<string, any>> {
  const res = await t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: { authorization: `Bearer ${t.seed.token}` } });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Events written for a call (the outbox), oldest first, with their parsed envelopes. */
export async function eventsOf(t: TestApp, callId: string): Promise<{ type: string; payload: Record<string, any> }[]> {
  const rows = await t.services.db.selectFrom('webhook_events').selectAll().where('call_id', '=', callId).orderBy('id').execute();
  return rows.map((row) => ({ type: row.type, payload: JSON.parse(row.payload) as Record<string, any> }));
}
