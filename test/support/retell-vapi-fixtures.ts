/**
 * Shared pieces of the Retell and Vapi tests: test credentials, the environment that points callgate at the
 * fakes, their workspaces' agents and numbers, callgate agents of each, and posting signed webhooks.
 */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import type { FakeRetell, RetellNumber } from './fake-retell.js';
import type { FakeVapi } from './fake-vapi.js';
import type { TestApp } from './test-app.js';

export const retellKey = 'key_test_retell_4c1e9a7b2d8f6053';
export const vapiKey = 'vapi_test_private_7e2d5c9a1b3f4086';
export const vapiSecret = 'vapi_test_hmac_0a9b8c7d6e5f4321';
/** Short enough for a quick timeout test, long enough that a loaded machine never times out by accident. */
export const providerTimeoutMs = 1_000;

export const retellAgentId = 'agent_5f3c9e1d2b7a4c6e8f0a1b2c3d';
export const retellNumber = '+14155550190';
export const vapiAssistantId = '3b1f6c2e-9d4a-4e8b-a7c5-1f2e3d4c5b6a';
export const vapiNumberId = '8c7d6e5f-4a3b-4c2d-9e1f-0a1b2c3d4e5f';

export function retellVapiEnv(retell: FakeRetell | undefined, vapi: FakeVapi | undefined, extra: Record<string, string> = {}) {
  return {
    ...(retell ? { RETELL_API_KEY: retellKey, RETELL_BASE_URL: retell.url } : {}),
    ...(vapi ? { VAPI_API_KEY: vapiKey, VAPI_WEBHOOK_SECRET: vapiSecret, VAPI_BASE_URL: vapi.url } : {}),
    CALLGATE_PROVIDER_TIMEOUT_MS: String(providerTimeoutMs),
    CALLGATE_RECONCILE_AFTER: '10m',
    ...extra,
  };
}

/** A Retell workspace with one agent bound to one number, and a Vapi organisation with one assistant and number. */
export function fillWorkspaces(retell: FakeRetell | undefined, vapi: FakeVapi | undefined): void {
  if (retell) {
    retell.agents = [{ agent_id: retellAgentId, agent_name: 'Retell reminders', channel: 'voice' }];
    retell.phoneNumbers = [
      {
        phone_number: retellNumber,
        phone_number_type: 'retell-twilio',
        nickname: 'Main',
        outbound_agents: [{ agent_id: retellAgentId, agent_version: 3, weight: 1 }],
      },
    ];
  }
  if (vapi) {
    vapi.assistants = [{ id: vapiAssistantId, name: 'Vapi reminders', createdAt: '2026-05-01T10:00:00.000Z' }];
    vapi.phoneNumbers = [{ id: vapiNumberId, number: '+14155550191', provider: 'twilio', assistantId: vapiAssistantId, name: 'Main' }];
  }
}

/** Retell agents of the workspace `fillRetellPages` makes, beside `retellAgentId`. */
export const retellPaged = {
  /** Shares a number with `renewals` (weight 0.7 there) and has none of its own. */
  followUps: 'agent_6a2b3c4d5e6f7a8b9c0d1e2f3a',
  /** Has 0.3 of the shared number and a number of its own (weight 1): it gets its own. */
  renewals: 'agent_7b3c4d5e6f7a8b9c0d1e2f3a4b',
  /** Bound by the single `outbound_agent_id` of a number from before weighted lists. */
  legacy: 'agent_8c4d5e6f7a8b9c0d1e2f3a4b5c',
  /** Bound to no number. */
  unbound: 'agent_9d5e6f7a8b9c0d1e2f3a4b5c6d',
  /** A chat agent, which a voice sync must not bring. */
  chat: 'agent_0e6f7a8b9c0d1e2f3a4b5c6d7e',
} as const;

export const retellPagedNumbers = {
  shared: '+14155550192',
  renewals: '+14155550193',
  legacy: '+14155550194',
  free: '+14155550195',
} as const;

/**
 * A Retell workspace of several pages (two items a page): five voice agents, a chat agent, and five
 * numbers bound every way Retell binds them, so that a sync that reads one page, or misreads a binding,
 * shows. Each voice agent's number after a sync is in `retellPagedExpected`.
 */
export function fillRetellPages(retell: FakeRetell): void {
  fillWorkspaces(retell, undefined);
  retell.pageSize = 2;
  const { followUps, renewals, legacy, unbound, chat } = retellPaged;
  retell.agents.push(
    { agent_id: followUps, agent_name: 'Follow-ups', channel: 'voice' },
    { agent_id: chat, agent_name: 'Chat support', channel: 'chat' },
    { agent_id: renewals, agent_name: 'Renewals', channel: 'voice' },
    { agent_id: legacy, agent_name: 'Legacy line' },
    { agent_id: unbound, agent_name: 'No number', channel: 'voice' },
  );
  const number = (phone_number: string, binding: Partial<RetellNumber>): RetellNumber => ({
    phone_number,
    phone_number_type: 'retell-twilio',
    nickname: phone_number.slice(-4),
    ...binding,
  });
  retell.phoneNumbers.push(
    number(retellPagedNumbers.shared, {
      outbound_agents: [
        { agent_id: renewals, agent_version: 1, weight: 0.3 },
        { agent_id: followUps, agent_version: 2, weight: 0.7 },
      ],
      // Left from before the weighted list, which wins where both are set.
      outbound_agent_id: legacy,
    }),
    number(retellPagedNumbers.renewals, { outbound_agents: [{ agent_id: renewals, agent_version: 1, weight: 1 }] }),
    number(retellPagedNumbers.legacy, { outbound_agent_id: legacy, inbound_agent_id: null }),
    number(retellPagedNumbers.free, { outbound_agents: [], inbound_agents: [] }),
  );
}

/** Each voice agent of `fillRetellPages` with its name and the number a sync gives it. */
export const retellPagedExpected: readonly (readonly [string, string, string | null])[] = [
  [retellAgentId, 'Retell reminders', retellNumber],
  [retellPaged.followUps, 'Follow-ups', retellPagedNumbers.shared],
  [retellPaged.renewals, 'Renewals', retellPagedNumbers.renewals],
  [retellPaged.legacy, 'Legacy line', retellPagedNumbers.legacy],
  [retellPaged.unbound, 'No number', null],
];

/** The paths the fake Retell served, as `METHOD /path`, once each in the order first asked. */
export function retellPathsServed(retell: FakeRetell): string[] {
  return [...new Set(retell.requests.map((request) => `${request.method} ${request.path}`))];
}

/** callgate agents `agent_rt` (Retell) and `agent_vp` (Vapi) in the seed account. */
export async function addRetellVapiAgents(t: TestApp): Promise<void> {
  const { db, clock } = t.services;
  const accountId = t.seed.accountId;
  await upsertAgent(db, clock, {
    accountId,
    agentId: 'agent_rt',
    name: 'Retell',
    provider: 'retell',
    providerAgentId: retellAgentId,
    phoneNumberId: retellNumber,
    phoneNumber: retellNumber,
  });
  await upsertAgent(db, clock, {
    accountId,
    agentId: 'agent_vp',
    name: 'Vapi',
    provider: 'vapi',
    providerAgentId: vapiAssistantId,
    phoneNumberId: vapiNumberId,
  });
}

/** Places a call through POST /v1/calls; its id and the provider's call id behind it. */
export async function placeCall(
  t: TestApp,
  agentId: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; providerId: string }> {
  const res = await t.createCall({ agent_id: agentId, to: '+14155550123', ...extra });
  assert.equal(res.statusCode, 201, res.body);
  const id = res.json().id as string;
  return { id, providerId: id.slice('call_'.length) };
}

export function postRetell(t: TestApp, body: string, signature: string | undefined): Promise<LightMyRequestResponse> {
  return t.inject({
    method: 'POST',
    url: '/providers/retell/webhook',
    headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'x-retell-signature': signature }) },
    payload: body,
  });
}

/** A Retell webhook signed with the API key at the app's time, as Retell sends it. */
export function sendRetell(t: TestApp, fake: FakeRetell, body: string): Promise<LightMyRequestResponse> {
  return postRetell(t, body, fake.sign(body, t.services.clock.now().getTime()));
}

export function postVapi(t: TestApp, body: string, headers: Record<string, string>): Promise<LightMyRequestResponse> {
  return t.inject({
    method: 'POST',
    url: '/providers/vapi/webhook',
    headers: { 'content-type': 'application/json', ...headers },
    payload: body,
  });
}

/** A Vapi server message signed with the credential's secret at the app's time. */
export function sendVapi(t: TestApp, fake: FakeVapi, body: string): Promise<LightMyRequestResponse> {
  return postVapi(t, body, fake.signedHeaders(body, t.services.clock.now().getTime()));
}
