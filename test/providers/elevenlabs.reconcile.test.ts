/**
 * Reconciliation of ElevenLabs calls whose outcome webhook never came: after CALLGATE_RECONCILE_AFTER the
 * call monitor asks GET /v1/convai/conversations/{id} and acts on each documented status; after 24 hours
 * without an answer the call fails with reason `timeout`. Time is a ManualClock; sweeps are run by hand.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { providerRetryDelayMs } from '../../src/features/calls/call-monitor.job.js';
import { failedConversationOutcome } from '../../src/features/providers/elevenlabs/elevenlabs.mapping.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import {
  addElevenLabsAgents,
  apiKey,
  elevenLabsEnv,
  eventsOf,
  nowSeconds,
  placeCall,
  readCall,
  sendSignedWebhook,
  transcriptionEvent,
  webhookSecret,
} from '../support/elevenlabs-fixtures.js';
import { memoryLogs } from '../support/memory-logs.js';

const minute = 60_000;
const reconcileAfterMs = 10 * minute;
const names = ['done', 'failed', 'initiated', 'inProgress', 'processing', 'unknown', 'erroring', 'webhooked'] as const;
type Name = (typeof names)[number];

await forEachDialect('ElevenLabs reconciliation', (dialect) => {
  const logs = memoryLogs();
  const clock = new ManualClock(Date.now());
  let fake: FakeElevenLabs;
  let t: TestApp;
  const calls = {} as Record<Name, { id: string; conversationId: string }>;
  /** How long after the first look-up each running call was to be looked at again. */
  const firstWaitMs: Partial<Record<Name, number>> = {};
  let startSecs = 0;

  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    // The monitor runs (so that sweep() works) but its own interval is out of the way: sweeps are by hand.
    t = await startTestApp(dialect, {
      env: elevenLabsEnv(fake),
      startMonitor: true,
      overrides: { clock, logger: logs.logger, monitorSweepIntervalMs: 3_600_000 },
    });
    await addElevenLabsAgents(t);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  const lookups = (name: Name) =>
    fake.requestsTo('conversation').filter((request) => request.path === `/v1/convai/conversations/${calls[name].conversationId}`);
  const sweep = () => t.services.callMonitor.pass();
  async function nextCheckAt(name: Name): Promise<number> {
    const row = await t.services.db.selectFrom('calls').select('next_check_at').where('id', '=', calls[name].id).executeTakeFirstOrThrow();
    assert.ok(row.next_check_at, `${name} has a next check`);
    return Date.parse(row.next_check_at);
  }
  function setConversation(name: Name, state: Record<string, unknown> & { status: string }): void {
    fake.conversations.set(calls[name].conversationId, {
      agent_id: 'agent_el_twilio',
      conversation_id: calls[name].conversationId,
      transcript: [],
      has_audio: true,
      has_user_audio: true,
      has_response_audio: true,
      ...state,
    });
  }

  it('a silent call is not looked up before CALLGATE_RECONCILE_AFTER', async () => {
    for (const name of names) calls[name] = await placeCall(t, name === 'processing' ? 'agent_el_sip' : 'agent_el_twilio');
    startSecs = nowSeconds(t) + 5;
    setConversation('done', {
      status: 'done',
      metadata: { start_time_unix_secs: startSecs, call_duration_secs: 95, termination_reason: 'Call ended by remote party' },
      analysis: { call_successful: 'success', transcript_summary: 'Ada will come at 14:00.' },
    });
    setConversation('failed', {
      status: 'failed',
      metadata: {
        start_time_unix_secs: startSecs,
        call_duration_secs: 0,
        error: { code: 1002, reason: 'The SIP trunk refused the call.' },
      },
      analysis: null,
    });
    setConversation('inProgress', {
      status: 'in-progress',
      metadata: { start_time_unix_secs: startSecs, call_duration_secs: 0 },
      analysis: null,
    });
    setConversation('processing', {
      status: 'processing',
      metadata: { start_time_unix_secs: startSecs, call_duration_secs: 48 },
      analysis: null,
    });
    fake.conversations.delete(calls.unknown.conversationId);
    fake.respond = (request) =>
      request.path.endsWith(`/${calls.erroring.conversationId}`) ? { status: 500, body: { detail: { message: 'internal' } } } : undefined;
    const webhook = await sendSignedWebhook(
      t,
      transcriptionEvent(calls.webhooked.conversationId, { startSecs, durationSecs: 20, summary: 'Via webhook.' }),
    );
    assert.equal(webhook.json().handling, 'recorded');

    clock.advance(reconcileAfterMs - 1_000);
    await sweep();
    assert.equal(fake.requestsTo('conversation').length, 0);
  });

  it('after it: done → call.completed, failed → call.failed, initiated / in-progress / processing → looked at later', async () => {
    clock.advance(2_000);
    await sweep();
    for (const name of names) {
      assert.equal(lookups(name).length, name === 'webhooked' ? 0 : 1, `lookups of ${name}`);
    }
    assert.ok(fake.requestsTo('conversation').every((request) => request.method === 'GET' && request.headers['xi-api-key'] === apiKey));

    const done = await readCall(t, calls.done.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.duration_seconds, 95);
    assert.equal(done.transcript_summary, 'Ada will come at 14:00.');
    assert.equal(done.started_at, new Date(startSecs * 1000).toISOString());
    assert.equal(done.ended_at, new Date((startSecs + 95) * 1000).toISOString());
    const [completed, ...moreDone] = await eventsOf(t, calls.done.id);
    assert.equal(moreDone.length, 0);
    assert.equal(completed!.type, 'call.completed');
    assert.deepEqual(completed!.payload.data, {
      id: calls.done.id,
      agent_id: 'agent_el_twilio',
      status: 'completed',
      duration_seconds: 95,
      transcript_summary: 'Ada will come at 14:00.',
      started_at: done.started_at,
      ended_at: done.ended_at,
      analysis: { successful: true, data: {} },
      to: '+14155550123',
      metadata: null,
    });

    const failed = await readCall(t, calls.failed.id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.failure_reason, 'provider_error');
    assert.equal(typeof failed.failure_message, 'string');
    assert.deepEqual(
      (await eventsOf(t, calls.failed.id)).map((event) => [event.type, event.payload.data.failure_reason]),
      [['call.failed', 'provider_error']],
    );

    const now = clock.now().getTime();
    for (const name of ['initiated', 'inProgress', 'processing', 'unknown'] as const) {
      assert.equal((await readCall(t, calls[name].id)).status, 'initiated', name);
      firstWaitMs[name] = (await nextCheckAt(name)) - now;
      assert.ok(firstWaitMs[name] >= minute, `${name} is looked at again at least a minute later`);
      assert.equal((await eventsOf(t, calls[name].id)).length, 0);
    }
    // ElevenLabs failing to answer is not an outcome: the monitor asks again after a tenth of the call's age.
    const erroring = await readCall(t, calls.erroring.id);
    assert.equal(erroring.status, 'initiated');
    const age = now - Date.parse(String(erroring.created_at));
    assert.ok(age > 5 * minute, `checked at ${age} ms`);
    assert.equal(await nextCheckAt('erroring'), now + Math.round(age / 10));
  });

  it('a running call is looked at again when due and ends once its conversation is done', async () => {
    setConversation('processing', {
      status: 'done',
      metadata: { start_time_unix_secs: startSecs, call_duration_secs: 48 },
      analysis: { call_successful: 'success', transcript_summary: 'Analysed late.' },
    });
    const due = Math.max(...(await Promise.all((['initiated', 'inProgress', 'processing', 'unknown'] as const).map(nextCheckAt))));
    clock.set(due + 1_000);
    await sweep();
    for (const name of ['initiated', 'inProgress', 'processing', 'unknown', 'erroring'] as const) {
      assert.equal(lookups(name).length, 2, `second lookup of ${name}`);
    }
    const processing = await readCall(t, calls.processing.id);
    assert.equal(processing.status, 'completed');
    assert.equal(processing.duration_seconds, 48);
    assert.equal(processing.transcript_summary, 'Analysed late.');
    for (const name of ['initiated', 'inProgress', 'unknown', 'erroring'] as const) {
      assert.equal((await readCall(t, calls[name].id)).status, 'initiated', name);
    }
    // Backoff: each wait is longer than the one before (and never beyond 30 minutes).
    for (const name of ['initiated', 'inProgress', 'unknown'] as const) {
      const secondWaitMs = (await nextCheckAt(name)) - clock.now().getTime();
      assert.ok(secondWaitMs > firstWaitMs[name]!, `${name}: ${secondWaitMs} ms after ${firstWaitMs[name]} ms`);
      assert.ok(secondWaitMs <= 30 * minute);
    }
    // Ended calls are never looked up again.
    assert.equal(lookups('done').length, 1);
    assert.equal(lookups('failed').length, 1);
  });

  it('a provider webhook after reconciliation recorded the outcome makes no second event', async () => {
    const res = await sendSignedWebhook(
      t,
      transcriptionEvent(calls.done.conversationId, { startSecs, durationSecs: 95, summary: 'Again.' }),
    );
    assert.equal(res.statusCode, 200);
    assert.equal(res.json().handling, 'duplicate');
    assert.equal((await eventsOf(t, calls.done.id)).length, 1);
    assert.equal((await readCall(t, calls.done.id)).transcript_summary, 'Ada will come at 14:00.');
  });

  it('no outcome within 24 hours → call.failed with failure_reason timeout', async () => {
    clock.set(Date.parse((await readCall(t, calls.initiated.id)).created_at) + 24 * 60 * minute + 1_000);
    await sweep();
    for (const name of ['initiated', 'inProgress', 'unknown', 'erroring'] as const) {
      const call = await readCall(t, calls[name].id);
      assert.equal(call.status, 'failed', name);
      assert.equal(call.failure_reason, 'timeout', name);
      const events = await eventsOf(t, calls[name].id);
      assert.deepEqual(
        events.map((event) => [event.type, event.payload.data.failure_reason]),
        [['call.failed', 'timeout']],
        name,
      );
    }
    const stillDue = await t.services.db.selectFrom('calls').select('id').where('status', '=', 'initiated').execute();
    assert.deepEqual(stillDue, []);
  });

  it('nothing logged contains the ElevenLabs API key, the webhook secret or our API token', () => {
    const text = logs.text();
    assert.match(text, /provider could not tell how a call stands/);
    for (const secretText of [apiKey, webhookSecret, t.seed.token]) assert.ok(!text.includes(secretText));
  });
});

it('a provider that cannot answer is asked again after a tenth of the call’s age, from 30 s to 30 min', () => {
  assert.equal(providerRetryDelayMs(0), 30_000);
  assert.equal(providerRetryDelayMs(15 * minute), 90_000);
  assert.equal(providerRetryDelayMs(2 * 60 * minute), 12 * minute);
  assert.equal(providerRetryDelayMs(23 * 60 * minute), 30 * minute);
});

it('a failed conversation ends busy or no_answer when its error or termination reason says so, else provider_error', () => {
  const at = new Date('2030-01-01T00:00:00.000Z');
  const failed = (metadata: Record<string, unknown>) => failedConversationOutcome({ status: 'failed', metadata }, at);
  const cases: [Record<string, unknown>, string, string][] = [
    [{ error: { code: 486, reason: 'User busy' } }, 'busy', 'User busy'],
    [{ termination_reason: 'Call failed: busy' }, 'busy', 'Call failed: busy'],
    [{ termination_reason: 'no-answer' }, 'no_answer', 'no-answer'],
    [{ error: { reason: 'The callee did not answer (no answer)' } }, 'no_answer', 'The callee did not answer (no answer)'],
    [{ termination_reason: 'Call was unanswered' }, 'no_answer', 'Call was unanswered'],
    [{ error: { code: 1002, reason: 'The SIP trunk refused the call.' } }, 'provider_error', 'The SIP trunk refused the call.'],
    [{ termination_reason: 'Businesses closed' }, 'provider_error', 'Businesses closed'],
    [{}, 'provider_error', 'The voice provider reports the conversation as failed.'],
  ];
  for (const [metadata, reason, message] of cases) {
    assert.deepEqual(failed(metadata), { status: 'failed', reason, message, failedAt: at }, JSON.stringify(metadata));
  }
});
