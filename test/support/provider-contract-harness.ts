/**
 * One catalogue entry under the provider contract on one database: its contract fake, the real app
 * configured for it (on a manual clock, the dial job and the call monitor driven by hand, the webhook
 * dispatcher running), an agent of the provider in the seed account, and a webhook endpoint at a local
 * receiver. Registered in a describe (before / after), as `appFor` is.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import type { DialRow } from '../../src/features/calls/dials.tables.js';
import type { ProviderEntry } from '../../src/features/providers/provider-entry.js';
import type { RealProvider } from '../../src/features/providers/provider-catalogue.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { contractFakes } from './contract-fakes/index.js';
import {
  agentInputOf,
  type CompletedOutcome,
  type ContractContent,
  type ContractOutcome,
  type ProviderContractFake,
  type SignedWebhook,
} from './provider-contract.js';
import { startTestApp, type TestApp } from './test-app.js';
import type { Dialect } from './test-database.js';
import { until } from './wait.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from './webhook-receiver.js';

export const contractSettings = {
  providerTimeoutMs: 1_000,
  reconcileAfterMs: 60_000,
  dialSearchWindowMs: 3_000,
} as const;

const hours24 = 24 * 3_600_000;

/** What every contract call is placed with; its events carry both back (`to`, `metadata`). */
export const contractCall = { to: '+14155550123', metadata: { customer_id: 'cus_42', attempt: 1 } } as const;

export interface ContractHarness {
  readonly entry: ProviderEntry<RealProvider>;
  readonly fake: ProviderContractFake;
  readonly t: TestApp;
  readonly clock: ManualClock;
  /** callgate's id of the provider's agent in the seed account. */
  readonly agentId: string;
  /** POST /v1/calls through the agent with the seed key; its call id and the provider's id of it. */
  placeCall(): Promise<{ id: string; providerCallId: string }>;
  /** Posts one webhook to the entry's route as the vendor would. */
  post(hook: SignedWebhook): Promise<LightMyRequestResponse>;
  /** Posts each webhook in turn (each answered 200); the `handling` of each answer. */
  deliver(hooks: readonly SignedWebhook[]): Promise<string[]>;
  /** The webhooks the vendor sends for the call's end, signed now. */
  webhooksFor(providerCallId: string, outcome: ContractOutcome, options?: { timestampMs?: number; forged?: boolean }): SignedWebhook[];
  /** The call.* envelope delivered for the call, verified as a receiver verifies it (Standard Webhooks). */
  deliveredFor(callId: string): Promise<Record<string, any>>;
  /** The events written for a call (the outbox), oldest first. */
  eventsOf(callId: string): Promise<{ type: string; payload: Record<string, any> }[]>;
  readCall(callId: string): Promise<Record<string, any>>;
  /** GET `url` with the seed key, or with `token`. */
  get(url: string, token?: string): Promise<LightMyRequestResponse>;
  dialOf(query: { callId: string } | { idempotencyKey: string }): Promise<DialRow | undefined>;
  /** Moves the clock on a second at a time, a dial job pass each, until the dial is known (at most a minute). */
  settleDial(dialId: string): Promise<DialRow>;
}

/**
 * What a completed call kept unless a case says otherwise: a judgement, results of each kind (one nested),
 * three turns, and a recording in the vendor's content type, large enough to come in many chunks and of every
 * byte value (never read as text).
 */
export function contractContent(recordingContentType: string): ContractContent {
  const magic = recordingContentType === 'audio/mpeg' ? 'ID3' : 'RIFF';
  return {
    successful: true,
    data: { appointment_confirmed: true, preferred_time: '14:00', party_size: 2, parking_needed: null },
    nestedData: { reminders: { channels: ['sms', 'email'], day_before: true } },
    turns: [
      { role: 'agent', text: 'Hi Ada, this is a reminder of your appointment tomorrow.', offsetSeconds: 0 },
      { role: 'user', text: 'Yes, I will be there at two.', offsetSeconds: 4 },
      { role: 'agent', text: 'Great, see you at 14:00.', offsetSeconds: 9 },
    ],
    recording: { contentType: recordingContentType, bytes: Buffer.concat([Buffer.from(magic), randomBytes(200_000)]) },
  };
}

/**
 * A completed call's outcome: answered two minutes ago (to the second), talked `durationSeconds`, kept
 * `contractContent` with any part of it `content` gives instead.
 */
export function completedOutcome(
  h: Pick<ContractHarness, 'clock' | 'fake'>,
  summary = 'Ada confirmed the appointment.',
  durationSeconds = 48,
  content: Partial<ContractContent> = {},
): CompletedOutcome {
  const startedAt = new Date(Math.floor(h.clock.now().getTime() / 1000) * 1000 - 2 * 60_000);
  return {
    status: 'completed',
    startedAt,
    durationSeconds,
    summary,
    content: { ...contractContent(h.fake.recordingContentType), ...content },
  };
}

export function contractHarness(dialect: Dialect, entry: ProviderEntry<RealProvider>): ContractHarness {
  const clock = new ManualClock();
  let started: { fake: ProviderContractFake; t: TestApp; receiver: WebhookReceiver; secret: string; agentId: string } | undefined;
  const ready = () => {
    if (!started) throw new Error('the contract harness is used before its describe started it');
    return started;
  };

  before(async () => {
    // Deliveries are signed at the app's time, which a receiver checks against its own: start at it.
    clock.set(Date.now());
    const fake = await contractFakes[entry.name]({ now: () => clock.now().getTime() });
    const t = await startTestApp(dialect, {
      env: {
        ...fake.env(),
        CALLGATE_PROVIDER_TIMEOUT_MS: String(contractSettings.providerTimeoutMs),
        CALLGATE_RECONCILE_AFTER: `${contractSettings.reconcileAfterMs}ms`,
        CALLGATE_DIAL_SEARCH_WINDOW: `${contractSettings.dialSearchWindowMs}ms`,
      },
      startWorker: true,
      // The dial job and the call monitor are moved on by hand (pass()); deliveries go out at once.
      overrides: { clock, dispatcherSweepIntervalMs: 20, dialSweepIntervalMs: hours24, monitorSweepIntervalMs: hours24 },
    });
    const { agent } = await upsertAgent(t.services.db, clock, agentInputOf(entry, fake.agent(), t.seed.accountId));
    const receiver = await startWebhookReceiver();
    const { secret } = await createEndpoint(t.services.db, clock, true, { accountId: t.seed.accountId, url: receiver.url });
    started = { fake, t, receiver, secret, agentId: agent.agent_id };
  });
  after(async () => {
    await started?.t.close();
    await started?.receiver.close();
    await started?.fake.close();
  });

  const harness: ContractHarness = {
    entry,
    clock,
    get fake() {
      return ready().fake;
    },
    get t() {
      return ready().t;
    },
    get agentId() {
      return ready().agentId;
    },
    async placeCall() {
      const res = await harness.t.createCall({ agent_id: harness.agentId, to: contractCall.to, metadata: contractCall.metadata });
      assert.equal(res.statusCode, 201, res.body);
      const id = res.json().id as string;
      return { id, providerCallId: id.slice('call_'.length) };
    },
    post(hook) {
      const { path } = entry.webhook(harness.t.services.config.providers[entry.name]);
      return harness.t.inject({ method: 'POST', url: path, headers: { ...hook.headers }, payload: hook.body });
    },
    async deliver(hooks) {
      const handlings: string[] = [];
      for (const hook of hooks) {
        const res = await harness.post(hook);
        assert.equal(res.statusCode, 200, res.body);
        handlings.push(res.json().handling as string);
      }
      return handlings;
    },
    webhooksFor(providerCallId, outcome, options = {}) {
      return harness.fake.webhooksFor(providerCallId, outcome, {
        timestampMs: options.timestampMs ?? clock.now().getTime(),
        ...(options.forged ? { forged: true } : {}),
      });
    },
    deliveredFor(callId) {
      const { receiver, secret } = ready();
      return until(`the delivery of ${callId}`, () =>
        receiver.received.map((hook) => verifyWebhook(hook, secret)).find((payload) => payload.data?.id === callId),
      );
    },
    async eventsOf(callId) {
      const rows = await harness.t.services.db
        .selectFrom('webhook_events')
        .selectAll()
        .where('call_id', '=', callId)
        .orderBy('id')
        .execute();
      return rows.map((row) => ({ type: row.type, payload: JSON.parse(row.payload) as Record<string, any> }));
    },
    async readCall(callId) {
      const res = await harness.t.inject({
        method: 'GET',
        url: `/v1/calls/${callId}`,
        headers: { authorization: `Bearer ${harness.t.seed.token}` },
      });
      assert.equal(res.statusCode, 200, res.body);
      return res.json();
    },
    get(url, token = harness.t.seed.token) {
      return harness.t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    },
    dialOf(query) {
      const dials = harness.t.services.db.selectFrom('dials').selectAll();
      return ('callId' in query ? dials.where('call_id', '=', query.callId) : dials.where('idempotency_key', '=', query.idempotencyKey))
        .orderBy('created_at')
        .executeTakeFirst();
    },
    async settleDial(dialId) {
      const open = new Set(['asking', 'checking']);
      for (let second = 0; second < 60; second++) {
        clock.advance(1_000);
        await harness.t.services.dialJob.pass();
        const dial = await harness.t.services.db.selectFrom('dials').selectAll().where('id', '=', dialId).executeTakeFirstOrThrow();
        if (!open.has(dial.state)) return dial;
      }
      throw new Error(`dial ${dialId} still open after a minute`);
    },
  };
  return harness;
}
