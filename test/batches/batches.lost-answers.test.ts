/**
 * A live batch whose dials lose their answers (issue: "never a second call, never a lost one"), through the
 * real app on its own clock and its own worker: the ElevenLabs adapter against the test suite's fake, with
 * a provider timeout of 1 s and a dial search window of 3 s (the fake lists a call as soon as it places it).
 * One recipient each meets the fake that (a) answers after the timeout having placed the call, (b) drops
 * the connection after placing it, (c) answers 500 after placing it, (d) never answers and places nothing;
 * one more is answered as usual. Each number whose call was placed is placed once at the fake and its recipient holds that call
 * (found by the dial job); the (d) recipient is dialed again once; every recipient ends final and each call
 * gets one outcome event.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { allRecipients, apiGet, createBatch, numbers, readBatch } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import {
  addElevenLabsAgents,
  apiKey,
  elevenLabsEnv,
  nowSeconds,
  providerTimeoutMs,
  sendSignedWebhook,
  transcriptionEvent,
  workspaceNumbers,
} from '../support/elevenlabs-fixtures.js';
import { startFakeElevenLabs, type FakeElevenLabs, type FakeReply, type FakeRequest } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';

const toOf = (req: FakeRequest) => (req.body as { to_number?: string } | null)?.to_number;

/** The first outbound request to each number of a case gets its reply; later ones are answered as usual. */
const lostReplies: readonly { readonly name: string; readonly reply: FakeReply; readonly placed: boolean }[] = [
  {
    name: '(a) answers after the timeout, having placed the call',
    reply: { status: 200, delayMs: providerTimeoutMs + 500, place: true },
    placed: true,
  },
  { name: '(b) drops the connection after placing the call', reply: { status: 200, destroy: true, place: true }, placed: true },
  {
    name: '(c) answers 500 after placing the call',
    reply: { status: 500, body: { detail: { status: 'internal_error', message: 'boom' } }, place: true },
    placed: true,
  },
  {
    name: '(d) never answers and places nothing',
    reply: { status: 200, delayMs: providerTimeoutMs + 500, body: { success: true, conversation_id: 'conv_never_placed' } },
    placed: false,
  },
];

await forEachDialect('A live batch whose dials lose their answers at ElevenLabs', (dialect) => {
  const tos = numbers(lostReplies.length + 1, 4100);
  const answeredTo = tos.at(-1)!;
  let fake: FakeElevenLabs;
  let t: TestApp;
  let receiver: WebhookReceiver;
  let endpointSecret: string;

  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    fake.phoneNumbers = structuredClone(workspaceNumbers);
    const asked = new Set<string>();
    fake.respond = (req) => {
      const to = toOf(req);
      const index = to === undefined ? -1 : tos.indexOf(to);
      if (req.route !== 'outbound' || index < 0 || index >= lostReplies.length || asked.has(to!)) return undefined;
      asked.add(to!);
      return lostReplies[index]!.reply;
    };
    t = await startTestApp(dialect, {
      env: elevenLabsEnv(fake, { CALLGATE_DIAL_SEARCH_WINDOW: '3s' }),
      startWorker: true,
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

  const outboundTo = (to: string) => fake.requestsTo('outbound').filter((req) => toOf(req) === to);
  const placedTo = (to: string) =>
    [...fake.conversations.values()].filter(
      (c) => (c.metadata as { phone_call?: { external_number?: string } }).phone_call?.external_number === to,
    );
  const delivered = () => receiver.received.map((hook) => verifyWebhook(hook, endpointSecret));

  it('places each number once, gives each recipient the call placed, dials the (d) recipient again once, and ends every recipient with one event per call', async () => {
    const batch = await createBatch(t, tos, { agent_id: 'agent_el_twilio', max_concurrency: tos.length });

    // Lost dials are looked for at the provider; the (d) one is dialed again once its search window ended.
    const holding = await until(
      'every recipient to hold a call',
      async () => {
        const recipients = await allRecipients(t, batch.id);
        return recipients.every((r) => r.status === 'in_progress' && typeof r.call_id === 'string') ? recipients : undefined;
      },
      60_000,
    );

    const listed = (await apiGet(t, '/v1/calls?limit=100')).json().data as { id: string; found_after_lost_answer?: boolean }[];
    for (const [index, recipient] of holding.entries()) {
      const to = tos[index]!;
      const lost = lostReplies[index];
      const what = lost?.name ?? 'answered as usual';
      assert.equal(recipient.to, to);
      const placed = placedTo(to);
      assert.equal(placed.length, 1, `${what}: one call placed at the fake`);
      assert.equal(outboundTo(to).length, lost?.placed === false ? 2 : 1, `${what}: requests to place the call`);
      const callId = `call_${placed[0]!.conversation_id}`;
      assert.equal(recipient.call_id, callId, what);
      assert.deepEqual(recipient.call_ids, [callId], what);
      assert.equal(recipient.attempts, 1, `${what}: one attempt (a dial that placed nothing gives its attempt back)`);
      const call = listed.find((item) => item.id === callId);
      assert.ok(call, `${what}: ${callId} is in GET /v1/calls`);
      assert.equal(call.found_after_lost_answer, lost?.placed === true ? true : undefined, what);

      const dials = await t.services.db
        .selectFrom('dials')
        .select(['state', 'call_id'])
        .where('to_number', '=', to)
        .orderBy('created_at')
        .execute();
      const states = lost === undefined ? ['placed'] : lost.placed ? ['found'] : ['not_placed', 'placed'];
      assert.deepEqual(
        dials.map((dial) => dial.state),
        states,
        what,
      );
      assert.equal(dials.at(-1)!.call_id, callId, what);
    }
    assert.equal(outboundTo(answeredTo).length, 1);

    // Their post-call webhooks, as ElevenLabs sends them (the conversation's user_id is its dial id).
    for (const recipient of holding) {
      const conversationId = (recipient.call_id as string).slice('call_'.length);
      const conversation = fake.conversations.get(conversationId)!;
      const event = transcriptionEvent(conversationId, {
        startSecs: nowSeconds(t) - 30,
        durationSecs: 20,
        summary: `Reached ${recipient.to}.`,
      });
      const data = event.data as Record<string, any>;
      data.user_id = conversation.user_id;
      data.metadata.phone_call.external_number = recipient.to;
      const res = await sendSignedWebhook(t, event);
      assert.equal(res.json().handling, 'recorded', res.body);
    }

    const callIds = holding.map((r) => r.call_id as string);
    const events = await until(
      'the outcome events of every call and the batch’s',
      () => {
        const payloads = delivered();
        const ofCalls = payloads.filter((p) => callIds.includes(p.data?.id));
        const ofBatch = payloads.filter((p) => p.type === 'batch.completed' && p.data?.id === batch.id);
        return ofCalls.length >= callIds.length && ofBatch.length > 0 ? { ofCalls, ofBatch } : undefined;
      },
      30_000,
    );
    for (const callId of callIds) {
      const ofCall = events.ofCalls.filter((p) => p.data.id === callId);
      assert.deepEqual(
        ofCall.map((p) => p.type),
        ['call.completed'],
        callId,
      );
      const written = await t.services.db.selectFrom('webhook_events').select('type').where('call_id', '=', callId).execute();
      assert.deepEqual(
        written.map((row) => row.type),
        ['call.completed'],
        `${callId}: one event written`,
      );
    }
    assert.equal(events.ofBatch.length, 1);

    const ended = await allRecipients(t, batch.id);
    assert.deepEqual(
      ended.map((r) => [r.status, r.call_id]),
      callIds.map((callId) => ['completed', callId]),
    );
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.counts, { total: 5, queued: 0, dialing: 0, in_progress: 0, completed: 5, failed: 0, cancelled: 0 });
    // Nothing dialed since: each number's requests are as counted above.
    for (const [index, to] of tos.entries()) assert.equal(outboundTo(to).length, lostReplies[index]?.placed === false ? 2 : 1, to);
    assert.equal(fake.conversations.size, tos.length);
  });
});
