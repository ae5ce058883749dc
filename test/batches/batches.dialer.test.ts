/**
 * The batch dialer step by step, on both databases, with an injected clock: passes and call-monitor sweeps
 * are run by hand, so each test sees exactly what one pass does. Nothing is dialed before scheduled_at nor
 * while paused; slots free only when calls end; a provider's 429 puts a recipient back in the queue with
 * backoff, its refusal or timeout fails it; a cancelled batch ends once its calls under way have ended.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { err } from '../../src/lib/result.js';
import type { ProviderFailure, VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { createSimulatorProvider, simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';
import { allRecipients, apiPost, createBatch, dialerPass, numbers, readBatch, startHandRunDialer } from '../support/batch-client.js';

const hour = 3600_000;
/** The simulator's call length in these tests (CALLGATE_SIMULATOR_DELAY_MS of test-app). */
const callMs = 50;

await forEachDialect('The batch dialer, pass by pass', (dialect) => {
  const clock = new ManualClock(Date.parse('2026-11-24T08:00:00.000Z'));
  const simulator = createSimulatorProvider({ clock, delayMs: callMs });
  /** The provider's next answer for a number, when it is a failure (used once). */
  const failures = new Map<string, ProviderFailure>();
  /** Calls to a number wait for this before the provider answers. */
  const gates = new Map<string, Promise<void>>();
  const provider: VoiceProvider = {
    ...simulator,
    placeCall: async (request) => {
      await gates.get(request.to);
      const failure = failures.get(request.to);
      failures.delete(request.to);
      return failure ? err(failure) : simulator.placeCall(request);
    },
  };
  let t: TestApp;

  before(async () => {
    t = await startHandRunDialer(dialect, { clock, provider, random: () => 0.5 });
  });
  after(async () => t.close());

  const dialer = () => t.services.batchDialer;
  const pass = () => dialerPass(t);
  /** The simulated calls under way end: time moves past them and the monitor records their outcomes. */
  const endCalls = async () => {
    clock.advance(callMs);
    await t.services.callMonitor.pass();
  };
  const statuses = async (id: string) => (await allRecipients(t, id)).map((r) => r.status as string);

  it('dials nothing before scheduled_at nor while paused, then keeps max_concurrency until every recipient ended', async () => {
    simulator.resetStats();
    const batch = await createBatch(t, numbers(5), {
      max_concurrency: 2,
      scheduled_at: new Date(clock.now().getTime() + hour).toISOString(),
    });
    await pass();
    clock.advance(hour - 1_000);
    await pass();
    assert.equal(simulator.stats().placed, 0);
    assert.deepEqual(await statuses(batch.id), Array(5).fill('queued'));
    assert.equal((await readBatch(t, batch.id)).status, 'scheduled');

    assert.equal((await apiPost(t, `/v1/batches/${batch.id}/pause`)).json().status, 'paused');
    clock.advance(hour);
    await pass();
    assert.equal(simulator.stats().placed, 0, 'a paused batch dials nothing, even past its time');

    assert.equal((await apiPost(t, `/v1/batches/${batch.id}/resume`)).json().status, 'running');
    await pass();
    assert.deepEqual(await statuses(batch.id), ['in_progress', 'in_progress', 'queued', 'queued', 'queued']);
    await pass();
    assert.equal(simulator.stats().placed, 2, 'no slot is free until a call ends');

    for (let round = 0; round < 3; round++) {
      await endCalls();
      await pass();
    }
    assert.deepEqual(await statuses(batch.id), Array(5).fill('completed'));
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.completed_at, clock.now().toISOString());
    assert.deepEqual(done.counts, { total: 5, queued: 0, dialing: 0, in_progress: 0, completed: 5, failed: 0, cancelled: 0 });
    assert.deepEqual(simulator.stats(), { placed: 5, inProgress: 0, highestConcurrency: 2 });
    const events = await t.services.db
      .selectFrom('webhook_events')
      .select(['type', 'payload'])
      .where('type', '=', 'batch.completed')
      .execute();
    assert.deepEqual(
      events.map((event) => JSON.parse(event.payload).data),
      [done],
    );
  });

  it('a 429 or an unavailable provider queues the recipient again with backoff; a refusal fails it; a lost answer is looked for, then dialed again once', async () => {
    const tos = numbers(4, 2000);
    failures.set(tos[0]!, { kind: 'unavailable', message: 'Too many concurrent requests.', retryable: true, retryAfterSeconds: 3 });
    failures.set(tos[1]!, { kind: 'unavailable', message: 'Unreachable.', retryable: true });
    failures.set(tos[2]!, { kind: 'rejected', message: 'The number is blocked.', retryable: false });
    failures.set(tos[3]!, { kind: 'timeout', message: 'The provider did not answer in time.', retryable: true });
    const batch = await createBatch(t, tos, { max_concurrency: 4 });
    await pass();
    const recipients = await allRecipients(t, batch.id);
    assert.deepEqual(
      recipients.map((r) => [r.status, r.failure_reason, r.call_id]),
      [
        ['queued', undefined, undefined],
        ['queued', undefined, undefined],
        ['failed', 'provider_error', undefined],
        // Its call may exist: held by its dial, which is looked for at the provider.
        ['dialing', undefined, undefined],
      ],
    );
    assert.equal(recipients[2]!.failure_message, 'The number is blocked.');
    const lost = await t.services.db.selectFrom('dials').selectAll().where('to_number', '=', tos[3]!).executeTakeFirstOrThrow();
    assert.equal(lost.state, 'checking');
    const next = await t.services.db
      .selectFrom('batch_recipients')
      .select(['to_number', 'next_attempt_at', 'deferrals'])
      .where('batch_id', '=', batch.id)
      .orderBy('position')
      .execute();
    // The provider's Retry-After for the first; 1 s (the jitter's middle) for the second.
    assert.equal(Date.parse(next[0]!.next_attempt_at) - clock.now().getTime(), 3_000);
    assert.equal(Date.parse(next[1]!.next_attempt_at) - clock.now().getTime(), 1_000);
    assert.deepEqual(
      next.slice(0, 2).map((row) => row.deferrals),
      [1, 1],
    );

    clock.advance(1_000);
    await pass();
    assert.deepEqual(await statuses(batch.id), ['queued', 'in_progress', 'failed', 'dialing']);
    clock.advance(2_000);
    await pass();
    await endCalls();

    // The provider lists no call for the lost dial by the end of its search window: dialed again, once.
    clock.advance(Date.parse(lost.search_until) - clock.now().getTime() + 1);
    await t.services.dialJob.pass();
    assert.equal(
      (await t.services.db.selectFrom('dials').select('state').where('id', '=', lost.id).executeTakeFirstOrThrow()).state,
      'not_placed',
    );
    // Queued again (its dialer may take it at once: the dial job wakes the workers).
    await pass();
    const redial = (await allRecipients(t, batch.id))[3]!;
    assert.equal(redial.status, 'in_progress');
    assert.equal(redial.attempts, 1, 'the lost dial placed nothing: its attempt was given back');
    await endCalls();
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.counts, { total: 4, queued: 0, dialing: 0, in_progress: 0, completed: 3, failed: 1, cancelled: 0 });
    const dials = await t.services.db.selectFrom('dials').select('state').where('to_number', '=', tos[3]!).orderBy('created_at').execute();
    assert.deepEqual(
      dials.map((dial) => dial.state),
      ['not_placed', 'placed'],
    );
  });

  it('a recipient whose redial loses its answer too, with nothing placed again, fails instead of being dialed a third time', async () => {
    const [to] = numbers(1, 2700);
    const lostAnswer: ProviderFailure = { kind: 'timeout', message: 'The provider did not answer in time.', retryable: true };
    failures.set(to!, lostAnswer);
    const batch = await createBatch(t, [to!]);
    await pass();
    /** The provider lists no call for the dial being checked by the end of its search window. */
    const searchEnds = async () => {
      const dial = await t.services.db
        .selectFrom('dials')
        .selectAll()
        .where('to_number', '=', to!)
        .where('state', '=', 'checking')
        .executeTakeFirstOrThrow();
      clock.advance(Date.parse(dial.search_until) - clock.now().getTime() + 1);
      await t.services.dialJob.pass();
      await pass();
    };
    // The redial (the dial job may wake the dialer at once) loses its answer too.
    failures.set(to!, lostAnswer);
    await searchEnds();
    assert.deepEqual(await statuses(batch.id), ['dialing'], 'dialed again once');
    await searchEnds();
    const [recipient] = await allRecipients(t, batch.id);
    assert.equal(recipient!.status, 'failed');
    assert.equal(recipient!.failure_reason, 'provider_error');
    assert.match(String(recipient!.failure_message), /lost on 2 dials in a row/);
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
    const dials = await t.services.db.selectFrom('dials').select('state').where('to_number', '=', to!).orderBy('created_at').execute();
    assert.deepEqual(
      dials.map((dial) => dial.state),
      ['not_placed', 'not_placed'],
    );
  });

  it('a batch cancelled while the provider answers 429 does not take the recipient back: it ends cancelled, and so does the batch', async () => {
    const [to] = numbers(1, 2500);
    let answer!: () => void;
    gates.set(to!, new Promise((resolve) => (answer = resolve)));
    failures.set(to!, { kind: 'unavailable', message: 'Too many concurrent requests.', retryable: true });
    const batch = await createBatch(t, [to!]);
    await dialer().pass();
    assert.deepEqual(await statuses(batch.id), ['dialing']);
    const cancelled = (await apiPost(t, `/v1/batches/${batch.id}/cancel`)).json();
    assert.equal(cancelled.completed_at, null, 'its recipient is being dialed');
    answer();
    await dialer().idle();
    assert.deepEqual(await statuses(batch.id), ['cancelled']);
    const ended = await readBatch(t, batch.id);
    assert.equal(ended.status, 'cancelled');
    assert.ok(ended.completed_at);
    gates.clear();
  });

  it("test mode uses the simulator's magic numbers: busy and no_answer fail with their call, refused fails without one", async () => {
    const batch = await createBatch(t, [
      simulatorMagicNumbers.busy,
      simulatorMagicNumbers.noAnswer,
      simulatorMagicNumbers.refused,
      '+14155550199',
    ]);
    await pass();
    await endCalls();
    const recipients = await allRecipients(t, batch.id);
    assert.deepEqual(
      recipients.map((r) => [r.status, r.failure_reason ?? null, typeof r.call_id]),
      [
        ['failed', 'busy', 'string'],
        ['failed', 'no_answer', 'string'],
        ['failed', 'provider_error', 'undefined'],
        ['completed', null, 'string'],
      ],
    );
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });

  it('cancel ends the queued recipients at once; the batch ends, cancelled, when its calls under way have ended', async () => {
    const batch = await createBatch(t, numbers(5, 3000), { max_concurrency: 2 });
    await pass();
    const cancelled = (await apiPost(t, `/v1/batches/${batch.id}/cancel`)).json();
    assert.equal(cancelled.status, 'cancelled');
    assert.equal(cancelled.completed_at, null, 'two calls are still under way');
    assert.deepEqual(await statuses(batch.id), ['in_progress', 'in_progress', 'cancelled', 'cancelled', 'cancelled']);
    const before = simulator.stats().placed;
    await pass();
    assert.equal(simulator.stats().placed, before, 'a cancelled batch dials nothing more');
    const eventsBefore = await t.services.db.selectFrom('webhook_events').select('id').where('type', '=', 'batch.completed').execute();

    await endCalls();
    const ended = await readBatch(t, batch.id);
    assert.equal(ended.status, 'cancelled');
    assert.ok(ended.completed_at);
    assert.deepEqual(ended.counts, { total: 5, queued: 0, dialing: 0, in_progress: 0, completed: 2, failed: 0, cancelled: 3 });
    const eventsAfter = await t.services.db
      .selectFrom('webhook_events')
      .select(['id', 'payload'])
      .where('type', '=', 'batch.completed')
      .execute();
    assert.equal(eventsAfter.length, eventsBefore.length + 1);
    assert.deepEqual(JSON.parse(eventsAfter.find((event) => !eventsBefore.some((b) => b.id === event.id))!.payload).data, ended);
  });

  it('a paused batch lets its calls under way end, dials nothing more, and completes once resumed', async () => {
    const batch = await createBatch(t, numbers(3, 4000), { max_concurrency: 1 });
    await pass();
    await apiPost(t, `/v1/batches/${batch.id}/pause`);
    await endCalls();
    await pass();
    assert.deepEqual(await statuses(batch.id), ['completed', 'queued', 'queued']);
    await apiPost(t, `/v1/batches/${batch.id}/resume`);
    for (let round = 0; round < 2; round++) {
      await pass();
      await endCalls();
    }
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });

  it("a batch whose last recipients ended in a process that stopped before finishing it is finished by the dialer's sweep, once", async () => {
    const batch = await createBatch(t, numbers(2, 5000), { max_concurrency: 2 });
    await pass();
    // What a process leaves when it stops after committing its calls' ends, before it finishes their batch.
    await t.services.db.updateTable('batch_recipients').set({ status: 'completed' }).where('batch_id', '=', batch.id).execute();
    assert.equal((await readBatch(t, batch.id)).completed_at, null);
    const completedEvents = async () =>
      (await t.services.db.selectFrom('webhook_events').select('payload').where('type', '=', 'batch.completed').execute()).filter(
        (event) => JSON.parse(event.payload).data.id === batch.id,
      ).length;

    // The dialer's sweep comes once per its interval (a day here).
    clock.advance(24 * hour);
    await pass();
    const finished = await readBatch(t, batch.id);
    assert.equal(finished.status, 'completed');
    assert.ok(finished.completed_at);
    assert.equal(await completedEvents(), 1);
    // Its calls' ends, reported late, and later sweeps finish nothing again.
    await endCalls();
    clock.advance(24 * hour);
    await pass();
    assert.equal(await completedEvents(), 1);
  });
});
