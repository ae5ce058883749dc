/**
 * Exactly one call per request when the provider's answer is lost (issue: "never a second call, never a lost
 * one"). A fake ElevenLabs answers after the timeout having placed the call, drops the connection or
 * answers 500 after placing it, or never answers and places nothing; a client retries as spec 4.1 rule 4
 * says (5xx and 429 with backoff, the same Idempotency-Key). Each ends with exactly one placed call per key,
 * the 201 of that call, and one outcome event. The app runs on a manual clock: the client's backoff moves it
 * on, and the dial job is asked for a pass after each wait, so nothing here sleeps.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import {
  addElevenLabsAgents,
  apiKey,
  elevenLabsEnv,
  providerTimeoutMs,
  sendSignedWebhook,
  transcriptionEvent,
} from '../support/elevenlabs-fixtures.js';
import { startFakeElevenLabs, type FakeElevenLabs, type FakeReply } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

interface LostCase {
  readonly name: string;
  readonly reply: FakeReply;
  readonly first: { readonly status: number; readonly error: string };
  readonly placed: boolean;
}

const cases: readonly LostCase[] = [
  {
    name: 'answers after the timeout, having placed the call',
    reply: { status: 200, delayMs: providerTimeoutMs + 500, body: { success: true, conversation_id: 'conv_late_answer' }, place: true },
    first: { status: 504, error: 'provider_timeout' },
    placed: true,
  },
  {
    name: 'drops the connection after placing the call',
    reply: { status: 200, destroy: true, place: true },
    first: { status: 503, error: 'provider_unavailable' },
    placed: true,
  },
  {
    name: 'answers 500 after placing the call',
    reply: { status: 500, body: { detail: { status: 'internal_error', message: 'boom' } }, place: true },
    first: { status: 503, error: 'provider_unavailable' },
    placed: true,
  },
  {
    name: 'never answers and places nothing',
    reply: { status: 200, delayMs: providerTimeoutMs + 500, body: { success: true, conversation_id: 'conv_never' } },
    first: { status: 504, error: 'provider_timeout' },
    placed: false,
  },
];

await forEachDialect('Lost provider answers: exactly one call per Idempotency-Key', (dialect) => {
  const clock = new ManualClock();
  let fake: FakeElevenLabs;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let endpointSecret: string;
  before(async () => {
    fake = await startFakeElevenLabs({ apiKey, now: () => clock.now().getTime() });
    fake.phoneNumbers = [
      { provider: 'twilio', phone_number_id: 'phnum_twilio_1', phone_number: '+14155550100', label: 'Main', assigned_agent: null },
    ];
    t = await startTestApp(dialect, {
      env: elevenLabsEnv(fake),
      startWorker: true,
      // The test moves the dials on (dialJob.pass()): a pass of its own between two steps (its sweep, or its look
      // a second after a lost answer) would find a call early.
      overrides: { clock, dispatcherSweepIntervalMs: 20, dialSweepIntervalMs: 24 * 3_600_000, dialLostLookMs: 24 * 3_600_000 },
    });
    await addElevenLabsAgents(t);
    receiver = await startWebhookReceiver();
    endpointSecret = (await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url }))
      .secret;
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
    await fake?.close();
  });

  /** A client of spec 4.1 rule 4: retries 5xx and 429 after Retry-After (the clock moves on), with the same key. */
  async function createRetrying(key: string, to: string): Promise<{ answers: LightMyRequestResponse[]; final: LightMyRequestResponse }> {
    const answers: LightMyRequestResponse[] = [];
    for (let attempt = 0; attempt < 100; attempt++) {
      const res = await t.createCall({ agent_id: 'agent_el_twilio', to }, { idempotencyKey: key });
      answers.push(res);
      if (res.statusCode < 500 && res.statusCode !== 429) return { answers, final: res };
      const retryAfter = Number(res.headers['retry-after']);
      assert.ok(Number.isInteger(retryAfter) && retryAfter > 0, `a ${res.statusCode} must say when to retry: ${res.body}`);
      clock.advance(retryAfter * 1000);
      await t.services.dialJob.pass();
    }
    throw new Error(`no final answer after 100 tries for ${key}`);
  }

  async function dialsOfKey(key: string) {
    return t.services.db.selectFrom('dials').selectAll().where('idempotency_key', '=', key).orderBy('created_at').execute();
  }

  async function deliveredEvents(callId: string): Promise<Record<string, any>[]> {
    return receiver.received.map((hook) => verifyWebhook(hook, endpointSecret)).filter((payload) => payload.data?.id === callId);
  }

  for (const [index, lost] of cases.entries()) {
    it(`the provider ${lost.name}: the first answer is ${lost.first.status}, then the retries end with one call and its 201`, async () => {
      const key = `lost-${dialect}-${index}`;
      const to = `+1415555${String(1000 + index)}`;
      const outboundBefore = fake.requestsTo('outbound').length;
      fake.queue('outbound', lost.reply);

      const { answers, final } = await createRetrying(key, to);
      assert.equal(answers[0]!.statusCode, lost.first.status, answers[0]!.body);
      assert.equal(answers[0]!.json().error, lost.first.error);
      assert.equal(final.statusCode, 201, final.body);
      // Every answer between said to retry, with the same code as the first, until the dial was known.
      for (const between of answers.slice(1, -1)) assert.equal(between.json().error, lost.first.error, between.body);

      const dials = await dialsOfKey(key);
      const outbound = fake.requestsTo('outbound').slice(outboundBefore);
      const placedAtFake = dials.flatMap((dial) => fake.conversationsOfDial(dial.id));
      assert.equal(placedAtFake.length, 1, 'exactly one call was placed at the provider');
      const callId = final.json().id as string;
      assert.equal(callId, `call_${placedAtFake[0]!.conversation_id}`);
      if (lost.placed) {
        assert.equal(outbound.length, 1, 'the number was dialed once');
        assert.deepEqual(
          dials.map((dial) => dial.state),
          ['found'],
        );
        assert.equal(final.headers['idempotent-replayed'], 'true', 'the retry gets the found call as a replay');
        const call = await t.inject({ method: 'GET', url: `/v1/calls/${callId}`, headers: { authorization: `Bearer ${t.seed.token}` } });
        assert.equal(call.json().found_after_lost_answer, true);
        const history = JSON.parse(dials[0]!.history) as { step: string }[];
        assert.match(history.at(-1)!.step, /Found at the provider/);
      } else {
        assert.equal(outbound.length, 2, 'dialed again only once the first dial was known not to have placed a call');
        assert.deepEqual(
          dials.map((dial) => dial.state),
          ['not_placed', 'placed'],
        );
        assert.equal(final.headers['idempotent-replayed'], undefined);
      }
      const replay = await t.createCall({ agent_id: 'agent_el_twilio', to }, { idempotencyKey: key });
      assert.equal(replay.json().id, callId);

      // Its post-call webhook: one outcome event.
      const started = Math.floor(clock.now().getTime() / 1000) - 30;
      const ended = await sendSignedWebhook(
        t,
        transcriptionEvent(placedAtFake[0]!.conversation_id as string, { startSecs: started, durationSecs: 20, summary: 'Confirmed.' }),
      );
      assert.equal(ended.json().handling, 'recorded', ended.body);
      const events = await until(`the outcome event of ${callId}`, async () => {
        const delivered = await deliveredEvents(callId);
        return delivered.length > 0 ? delivered : undefined;
      });
      assert.equal(events.length, 1);
      assert.equal(events[0]!.type, 'call.completed');
    });
  }

  describe('a post-call webhook that comes before its call is found', () => {
    it('is held, matched to the dial by its user_id, and its event sent once the call is found', async () => {
      const key = `lost-${dialect}-early-webhook`;
      fake.queue('outbound', { status: 200, destroy: true, place: true });
      const first = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155552000' }, { idempotencyKey: key });
      assert.equal(first.statusCode, 503, first.body);
      const [dial] = await dialsOfKey(key);
      const [conversation] = fake.conversationsOfDial(dial!.id);
      const callId = `call_${conversation!.conversation_id}`;

      const event = transcriptionEvent(conversation!.conversation_id as string, {
        startSecs: Math.floor(clock.now().getTime() / 1000) - 20,
        durationSecs: 15,
        summary: 'Early report.',
      });
      (event.data as Record<string, unknown>).user_id = dial!.id;
      const early = await sendSignedWebhook(t, event);
      assert.equal(early.json().handling, 'held', early.body);
      // Sent again (ElevenLabs retries): still one report held.
      assert.equal((await sendSignedWebhook(t, event)).json().handling, 'held');

      // The report names the dial: a pass finds the call without waiting for its next look (the clock stands still).
      await until('the dial to be found', async () => {
        await t.services.dialJob.pass();
        const row = await t.services.db.selectFrom('dials').select('state').where('id', '=', dial!.id).executeTakeFirstOrThrow();
        return row.state === 'found' ? true : undefined;
      });
      await t.services.dialJob.pass();
      const events = await until(`the outcome event of ${callId}`, async () => {
        const delivered = await deliveredEvents(callId);
        return delivered.length > 0 ? delivered : undefined;
      });
      assert.equal(events.length, 1);
      assert.equal(events[0]!.data.transcript_summary, 'Early report.');
      const retry = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155552000' }, { idempotencyKey: key });
      assert.equal(retry.statusCode, 201, retry.body);
      assert.equal(retry.json().id, callId);
      assert.equal((await t.services.db.selectFrom('held_outcomes').selectAll().execute()).length, 0, 'the held report is used up');
    });
  });

  describe('without an Idempotency-Key', () => {
    it('a placed call whose answer was lost still appears in GET /v1/calls, found by the dial job', async () => {
      fake.queue('outbound', { status: 500, body: { detail: 'boom' }, place: true });
      const first = await t.createCall({ agent_id: 'agent_el_twilio', to: '+14155553000' });
      assert.equal(first.statusCode, 503, first.body);
      assert.match(first.json().message, /Do not retry without an Idempotency-Key/);
      const dial = await t.services.db.selectFrom('dials').selectAll().where('to_number', '=', '+14155553000').executeTakeFirstOrThrow();
      clock.advance(5_000);
      // The worker's own sweep may take the look: wait for it, whichever pass makes it.
      await until('the dial to be found', async () => {
        await t.services.dialJob.pass();
        const row = await t.services.db.selectFrom('dials').select('state').where('id', '=', dial.id).executeTakeFirstOrThrow();
        return row.state === 'found' ? true : undefined;
      });
      const [conversation] = fake.conversationsOfDial(dial.id);
      const listed = await t.inject({ method: 'GET', url: '/v1/calls?limit=100', headers: { authorization: `Bearer ${t.seed.token}` } });
      const call = (listed.json().data as { id: string; found_after_lost_answer?: boolean }[]).find(
        (item) => item.id === `call_${conversation!.conversation_id}`,
      );
      assert.ok(call, 'the call found is listed');
      assert.equal(call.found_after_lost_answer, true);
    });
  });
});
