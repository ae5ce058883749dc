/**
 * How a batch treats the outcomes the voice providers added: `voicemail` is retried when `retry.on` names
 * it (and only then), and a call the provider refused at its concurrency limit (Retell's
 * `concurrency_limit_reached`, Vapi's concurrency-blocked start) puts its recipient back in the queue
 * without using an attempt, as a 429 does. The real app with a hand-run dialer and an injected clock.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { createSimulatorProvider, simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { ManualClock } from '../../src/lib/clock.js';
import { ok } from '../../src/lib/result.js';
import { allRecipients, apiGet, createBatch, dialerPass, readBatch, startHandRunDialer } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';

const minute = 60_000;
const callMs = 50;
/** Calls to this number are refused at the provider's concurrency limit while `refusals` lasts. */
const crowded = '+14155550777';

await forEachDialect('Batches and the providers’ outcomes: voicemail retries and concurrency refusals', (dialect) => {
  const clock = new ManualClock(Date.parse('2026-06-02T12:00:00.000Z'));
  let refusals = 0;
  let placed = 0;
  let t: TestApp;

  before(async () => {
    const simulator = createSimulatorProvider({ clock, delayMs: callMs });
    const provider: VoiceProvider = {
      ...simulator,
      placeCall: async (request) => {
        placed += 1;
        return simulator.placeCall(request);
      },
      checkCall: async (call) => {
        if (call.to !== crowded || refusals === 0) return simulator.checkCall(call);
        refusals -= 1;
        return ok({
          state: 'ended',
          outcome: {
            status: 'failed',
            reason: 'provider_error',
            message: 'The voice provider was at its concurrency limit; nobody was dialed. (Retell: concurrency_limit_reached)',
            failedAt: clock.now(),
            concurrencyRefused: true,
          },
        });
      },
    };
    t = await startHandRunDialer(dialect, { clock, provider, random: () => 0.5 });
  });
  after(async () => t?.close());

  const endCalls = async () => {
    clock.advance(callMs);
    await t.services.callMonitor.pass();
  };

  it('retry.on voicemail dials a voicemail recipient again; without it, voicemail is final', async () => {
    const retried = await createBatch(t, [simulatorMagicNumbers.voicemail], {
      retry: { on: ['voicemail'], max_attempts: 2, delay_minutes: 1 },
    });
    const notRetried = await createBatch(t, [simulatorMagicNumbers.voicemail], { retry: { max_attempts: 2, delay_minutes: 1 } });
    assert.deepEqual(notRetried.retry.on, ['busy', 'no_answer'], 'the default stays busy and no_answer');
    await dialerPass(t);
    await endCalls();
    const [again] = await allRecipients(t, retried.id);
    assert.deepEqual([again!.status, again!.attempts], ['queued', 1]);
    const [final] = await allRecipients(t, notRetried.id);
    assert.deepEqual([final!.status, final!.failure_reason, final!.attempts], ['failed', 'voicemail', 1]);

    clock.advance(minute);
    await dialerPass(t);
    await endCalls();
    const [last] = await allRecipients(t, retried.id);
    assert.deepEqual([last!.status, last!.failure_reason, last!.attempts, last!.call_ids.length], ['failed', 'voicemail', 2, 2]);
    for (const callId of last!.call_ids) {
      const call = (await apiGet(t, `/v1/calls/${callId}`)).json();
      assert.deepEqual([call.status, call.failure_reason], ['failed', 'voicemail']);
    }
    assert.equal((await readBatch(t, retried.id)).status, 'completed');
  });

  it('a call refused at the provider’s concurrency limit is queued again with backoff, its attempt given back', async () => {
    refusals = 2;
    // Counted before the batch exists: its creation wakes the dialer, which may dial at once.
    const before = placed;
    const batch = await createBatch(t, [crowded]);
    assert.equal(batch.retry, null, 'one attempt only: the refusals must not use it');
    for (let refusal = 1; refusal <= 2; refusal++) {
      await dialerPass(t);
      await endCalls();
      const [recipient] = await allRecipients(t, batch.id);
      assert.deepEqual([recipient!.status, recipient!.attempts, recipient!.call_ids.length], ['queued', 0, refusal], `refusal ${refusal}`);
      const backoff = Date.parse(recipient!.next_attempt_at!) - clock.now().getTime();
      assert.ok(backoff >= 0.8 * 1000 * 2 ** (refusal - 1) && backoff <= 1.2 * 1000 * 2 ** (refusal - 1), `backoff ${backoff} ms`);
      await dialerPass(t);
      assert.equal(placed, before + refusal, `not dialed again before its backoff (refusal ${refusal}, before ${before})`);
      clock.advance(backoff);
    }
    await dialerPass(t);
    await endCalls();
    const [done] = await allRecipients(t, batch.id);
    assert.deepEqual([done!.status, done!.attempts, done!.call_ids.length], ['completed', 1, 3]);
    assert.equal(placed, before + 3);
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });
});
