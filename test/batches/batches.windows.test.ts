/**
 * Calling windows and retries of batches through the real app, on both databases, with an injected clock
 * (passes and call-monitor sweeps run by hand, as in batches.dialer.test.ts). The tests move the clock
 * forwards only, through a year: New York into and out of daylight-saving time, India's half-hour offset,
 * retries of busy lines after their delay and inside their window.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { weekdays } from '../../src/features/batches/calling-window.js';
import type { VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { createSimulatorProvider, simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';
import type { Dialect } from '../support/test-database.js';
import {
  allRecipients,
  apiGet,
  createBatch,
  dialerPass,
  numbers,
  postBatch,
  readBatch,
  startHandRunDialer,
} from '../support/batch-client.js';

const hour = 3600_000;
const minute = 60_000;
const callMs = 50;
const newYork = { start: '09:00', end: '17:00', time_zone: 'America/New_York' };

let clock: ManualClock;
let simulator: ReturnType<typeof createSimulatorProvider>;
/** Calls to a number wait for this before the provider answers. */
const gates = new Map<string, Promise<void>>();
const placedTo: string[] = [];
let t: TestApp;

/** Each part below starts an app whose dialer runs by hand, with a clock of its own from 7 March 2026. */
function withHandRunDialer(dialect: Dialect): void {
  before(async () => {
    clock = new ManualClock(Date.parse('2026-03-07T12:00:00.000Z'));
    simulator = createSimulatorProvider({ clock, delayMs: callMs });
    gates.clear();
    placedTo.length = 0;
    const provider: VoiceProvider = {
      ...simulator,
      placeCall: async (request) => {
        await gates.get(request.to);
        placedTo.push(request.to);
        return simulator.placeCall(request);
      },
    };
    t = await startHandRunDialer(dialect, { clock, provider, random: () => 0.5 });
  });
  after(async () => t.close());
}

const pass = () => dialerPass(t);
const endCalls = async () => {
  clock.advance(callMs);
  await t.services.callMonitor.pass();
};
const view = async (id: string) => (await allRecipients(t, id)).map((r) => [r.status, r.attempts, r.next_attempt_at]);
const completedEvents = async (batchId: string) =>
  (await t.services.db.selectFrom('webhook_events').select('payload').where('type', '=', 'batch.completed').execute()).filter(
    (event) => JSON.parse(event.payload).data.id === batchId,
  ).length;

await forEachDialect('Calling windows of batches', (dialect) => {
  withHandRunDialer(dialect);

  it('refuses a bad calling_window or retry with a 400 that names the field, and echoes a good one', async () => {
    const tos = numbers(2, 100);
    const cases: [Record<string, unknown>, string][] = [
      [{ calling_window: { ...newYork, time_zone: 'Mars/Olympus_Mons' } }, 'calling_window.time_zone'],
      [{ calling_window: { ...newYork, time_zone: 'recipient' } }, 'calling_window.fallback_time_zone'],
      [{ calling_window: { ...newYork, time_zone: 'recipient', fallback_time_zone: 'Nowhere' } }, 'calling_window.fallback_time_zone'],
      [{ calling_window: { ...newYork, start: '22:00', end: '06:00' } }, 'calling_window.end'],
      [{ calling_window: { ...newYork, start: '9am' } }, 'calling_window.start'],
      [{ calling_window: { ...newYork, days: ['mon', 'mon'] } }, 'calling_window.days'],
      [{ calling_window: { ...newYork, days: [] } }, 'calling_window.days'],
      [{ calling_window: { ...newYork, days: ['funday'] } }, 'calling_window.days[0]'],
      [{ calling_window: { start: '09:00', end: '17:00' } }, 'calling_window.time_zone'],
      [{ retry: { max_attempts: 6 } }, 'retry.max_attempts'],
      [{ retry: { max_attempts: 0 } }, 'retry.max_attempts'],
      [{ retry: { delay_minutes: 1441 } }, 'retry.delay_minutes'],
      [{ retry: { on: ['unknown'] } }, 'retry.on[0]'],
      [{ retry: { on: ['busy', 'busy'] } }, 'retry.on'],
      [{ retry: { on: [] } }, 'retry.on'],
    ];
    for (const [extra, param] of cases) {
      const res = await postBatch(t, { agent_id: t.seed.agentId, recipients: tos.map((to) => ({ to })), ...extra });
      assert.equal(res.statusCode, 400, `${JSON.stringify(extra)}: ${res.body}`);
      const body = res.json();
      assert.equal(body.error, 'invalid_request');
      assert.equal(body.param, param, body.message);
      assert.match(body.request_id, /^req_/);
    }
    // The simulator's numbers are in no area: libphonenumber gives them every zone of +1, from Guam to
    // Newfoundland, which are never all inside 09:00-17:00 at once.
    const never = await postBatch(t, {
      agent_id: t.seed.agentId,
      recipients: [{ to: '+12125550100' }, { to: simulatorMagicNumbers.busy }],
      calling_window: { ...newYork, time_zone: 'recipient', fallback_time_zone: 'UTC' },
    });
    assert.equal(never.statusCode, 400, never.body);
    assert.equal(never.json().param, 'recipients[1].to');
    assert.match(never.json().message, /never open in all at once/);

    const batch = await createBatch(t, tos, {
      calling_window: { start: '08:00', end: '21:00', days: ['sat', 'mon'], time_zone: 'recipient', fallback_time_zone: 'Europe/London' },
      retry: { max_attempts: 3 },
    });
    assert.deepEqual(batch.calling_window, {
      start: '08:00',
      end: '21:00',
      days: ['mon', 'sat'],
      time_zone: 'recipient',
      fallback_time_zone: 'Europe/London',
    });
    assert.deepEqual(batch.retry, { on: ['busy', 'no_answer'], max_attempts: 3, delay_minutes: 30 });
    assert.deepEqual(await readBatch(t, batch.id), batch);
    await t.inject({ method: 'POST', url: `/v1/batches/${batch.id}/cancel`, headers: { authorization: `Bearer ${t.seed.token}` } });
  });

  it('stores and echoes a zone sent in the wrong case by its tz database name', async () => {
    const tos = numbers(2, 110);
    for (const [sent, shown] of [
      [{ time_zone: 'america/new_york' }, { time_zone: 'America/New_York' }],
      [{ time_zone: 'ETC/GMT+5' }, { time_zone: 'Etc/GMT+5' }],
      [
        { time_zone: 'recipient', fallback_time_zone: 'EUROPE/LONDON' },
        { time_zone: 'recipient', fallback_time_zone: 'Europe/London' },
      ],
      // A zone written right is kept as written, an older name of a zone too.
      [{ time_zone: 'Asia/Kolkata' }, { time_zone: 'Asia/Kolkata' }],
      [{ time_zone: 'US/Eastern' }, { time_zone: 'US/Eastern' }],
    ] as const) {
      const batch = await createBatch(t, tos, { calling_window: { start: '09:00', end: '17:00', ...sent } });
      assert.deepEqual(batch.calling_window, { start: '09:00', end: '17:00', days: [...weekdays], ...shown }, JSON.stringify(sent));
      assert.deepEqual((await readBatch(t, batch.id)).calling_window, batch.calling_window);
      await t.inject({ method: 'POST', url: `/v1/batches/${batch.id}/cancel`, headers: { authorization: `Bearer ${t.seed.token}` } });
    }
  });

  it('waits for the window in New York across the March change to daylight time, and dials at its opening', async () => {
    // Saturday 7 March 2026, 18:00 EST: closed until Sunday 09:00, which is EDT (UTC-4) after the change.
    clock.set(Date.parse('2026-03-07T23:00:00.000Z'));
    const placed = placedTo.length;
    const batch = await createBatch(t, numbers(2, 200), { calling_window: newYork });
    assert.equal(batch.status, 'running');
    const opening = '2026-03-08T13:00:00.000Z';
    assert.deepEqual(await view(batch.id), [
      ['queued', 0, opening],
      ['queued', 0, opening],
    ]);
    await pass();
    clock.set(Date.parse(opening) - 1);
    await pass();
    assert.equal(placedTo.length, placed, 'nothing is dialed before the window opens');
    clock.set(Date.parse(opening));
    await pass();
    assert.deepEqual(await view(batch.id), [
      ['in_progress', 1, null],
      ['in_progress', 1, null],
    ]);
    await endCalls();
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });

  it('retries a busy line after its delay, inside the window: past 17:00 it waits for the next morning', async () => {
    // Monday 9 March 2026, 16:30 EDT: a retry 60 minutes later would be at 17:30, after the window.
    clock.set(Date.parse('2026-03-09T20:30:00.000Z'));
    const batch = await createBatch(t, [simulatorMagicNumbers.busy], {
      calling_window: newYork,
      retry: { on: ['busy'], max_attempts: 2, delay_minutes: 60 },
    });
    await pass();
    await endCalls();
    const [waiting] = await allRecipients(t, batch.id);
    assert.equal(waiting!.status, 'queued');
    assert.equal(waiting!.attempts, 1);
    assert.equal(waiting!.next_attempt_at, '2026-03-10T13:00:00.000Z', 'Tuesday 09:00 EDT');
    assert.equal(waiting!.call_ids.length, 1);
    assert.equal(waiting!.call_id, waiting!.call_ids[0]);
    assert.equal(waiting!.failure_reason, undefined);
    // It says why it waits: its call's outcome, as the call itself tells it.
    const firstCall = (await apiGet(t, `/v1/calls/${waiting!.call_id}`)).json();
    assert.deepEqual(
      [waiting!.last_failure_reason, waiting!.last_failure_message],
      ['busy', firstCall.failure_message],
      'a queued retry names the failure it waits after',
    );
    assert.ok(firstCall.failure_message, 'the simulator says something with a busy line');
    clock.set(Date.parse('2026-03-10T13:00:00.000Z'));
    await pass();
    await endCalls();
    const [final] = await allRecipients(t, batch.id);
    assert.deepEqual([final!.status, final!.failure_reason, final!.attempts, final!.next_attempt_at], ['failed', 'busy', 2, null]);
    assert.equal(final!.last_failure_reason, 'busy');
    assert.equal(final!.call_ids.length, 2);
    assert.equal(final!.call_id, final!.call_ids[1]);
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });

  it("dials each recipient inside its own zones: India's half-hour offset, both of Adelaide's and Perth's, a fallback for others", async () => {
    // 1 June 2026, 03:00 UTC: 08:30 in Kolkata, 12:30 in Adelaide, 11:00 in Perth, 23:00 (the day before) in New York.
    clock.set(Date.parse('2026-06-01T03:00:00.000Z'));
    const tos = ['+919876543210', '+12125550123', '+61881234567', '+8823456789'];
    const batch = await createBatch(t, tos, {
      calling_window: { ...newYork, time_zone: 'recipient', fallback_time_zone: 'Asia/Tokyo' },
    });
    // Adelaide and Perth are both open (01:00 to 07:30 UTC in June), and so is Tokyo (the fallback, 12:00):
    // those two are due at once (a pass started by the batch's creation may have dialed them already).
    await pass();
    assert.deepEqual(await view(batch.id), [
      ['queued', 0, '2026-06-01T03:30:00.000Z'],
      ['queued', 0, '2026-06-01T13:00:00.000Z'],
      ['in_progress', 1, null],
      ['in_progress', 1, null],
    ]);
    await endCalls();
    clock.set(Date.parse('2026-06-01T03:30:00.000Z'));
    await pass();
    assert.deepEqual(
      (await view(batch.id)).map(([status]) => status),
      ['in_progress', 'queued', 'completed', 'completed'],
    );
    await endCalls();
    clock.set(Date.parse('2026-06-01T13:00:00.000Z'));
    await pass();
    await endCalls();
    assert.deepEqual(
      (await view(batch.id)).map(([status]) => status),
      ['completed', 'completed', 'completed', 'completed'],
    );
  });

  it('a recipient still queued when its window closes (November, daylight time ending) waits for the next opening', async () => {
    // Saturday 31 October 2026, 16:59 EDT; Sunday's 09:00 is EST (UTC-5).
    clock.set(Date.parse('2026-10-31T20:59:00.000Z'));
    const batch = await createBatch(t, numbers(3, 300), { calling_window: newYork, max_concurrency: 1 });
    await pass();
    clock.advance(2 * minute);
    await endCalls();
    const placed = placedTo.length;
    await pass();
    assert.equal(placedTo.length, placed, 'the window closed at 17:00');
    const opening = '2026-11-01T14:00:00.000Z';
    assert.deepEqual(await view(batch.id), [
      ['completed', 1, null],
      ['queued', 0, opening],
      // Moved with the one claimed: the same zone, so no pass need claim it to learn the window is closed.
      ['queued', 0, opening],
    ]);
    assert.equal((await readBatch(t, batch.id)).counts.queued, 2);
    clock.set(Date.parse(opening));
    for (let round = 0; round < 2; round++) {
      await pass();
      await endCalls();
    }
    assert.deepEqual(
      (await view(batch.id)).map(([status, attempts]) => [status, attempts]),
      [
        ['completed', 1],
        ['completed', 1],
        ['completed', 1],
      ],
    );
  });
});

await forEachDialect('Retries of batches', (dialect) => {
  withHandRunDialer(dialect);

  it('retries listed failures up to max_attempts; counts and batch.completed come after the last attempt', async () => {
    clock.set(Date.parse('2026-12-01T12:00:00.000Z'));
    const normal = numbers(1, 400)[0]!;
    const batch = await createBatch(
      t,
      [simulatorMagicNumbers.busy, simulatorMagicNumbers.noAnswer, simulatorMagicNumbers.refused, normal],
      {
        retry: { on: ['busy'], max_attempts: 3, delay_minutes: 10 },
      },
    );
    for (let attempt = 1; attempt <= 3; attempt++) {
      await pass();
      await endCalls();
      const [busy, noAnswer, refused, done] = await allRecipients(t, batch.id);
      // Not listed in `on`, refused by the provider, or answered: each ends after its one attempt.
      assert.deepEqual([noAnswer!.status, noAnswer!.failure_reason, noAnswer!.attempts], ['failed', 'no_answer', 1]);
      assert.deepEqual(
        [refused!.status, refused!.failure_reason, refused!.attempts, refused!.call_ids],
        ['failed', 'provider_error', 1, []],
      );
      assert.deepEqual([done!.status, done!.attempts, done!.last_failure_reason, done!.last_failure_message], ['completed', 1, null, null]);
      assert.equal(busy!.last_failure_reason, 'busy', 'queued for a retry or failed for good, it names its failure');
      assert.equal(busy!.attempts, attempt);
      assert.equal(busy!.call_ids.length, attempt);
      assert.equal(new Set(busy!.call_ids).size, attempt, 'a new call each attempt');
      assert.equal(busy!.call_id, busy!.call_ids.at(-1));
      const current = await readBatch(t, batch.id);
      if (attempt < 3) {
        assert.equal(busy!.status, 'queued');
        assert.equal(busy!.next_attempt_at, new Date(clock.now().getTime() + 10 * minute).toISOString());
        assert.deepEqual(current.counts, { total: 4, queued: 1, dialing: 0, in_progress: 0, completed: 1, failed: 2, cancelled: 0 });
        assert.equal(current.status, 'running');
        assert.equal(await completedEvents(batch.id), 0);
        const before = placedTo.length;
        clock.advance(10 * minute - 1);
        await pass();
        assert.equal(placedTo.length, before, 'not before the delay');
        clock.advance(1);
      } else {
        assert.deepEqual(
          [busy!.status, busy!.failure_reason, busy!.next_attempt_at],
          ['failed', 'busy', null],
          'the last failure is final',
        );
        assert.deepEqual(current.counts, { total: 4, queued: 0, dialing: 0, in_progress: 0, completed: 1, failed: 3, cancelled: 0 });
        assert.equal(current.status, 'completed');
        assert.equal(await completedEvents(batch.id), 1);
        for (const callId of busy!.call_ids) {
          const call = (await apiGet(t, `/v1/calls/${callId}`)).json();
          assert.deepEqual([call.status, call.failure_reason, call.batch_id], ['failed', 'busy', batch.id]);
        }
      }
    }
  });

  it('a recipient claimed by a worker that stopped before recording its dial is queued again (the provider was never asked), its attempt given back', async () => {
    clock.set(Date.parse('2026-12-02T12:00:00.000Z'));
    const [to] = numbers(1, 8800);
    const batch = await createBatch(t, [to!], { retry: { max_attempts: 2, delay_minutes: 1 } });
    // What a claim leaves when its worker dies before the dial is recorded: `dialing`, one attempt counted, a lease.
    await t.services.db
      .updateTable('batch_recipients')
      .set({ status: 'dialing', attempts: 1, locked_until: new Date(clock.now().getTime() + 60_000).toISOString() })
      .where('batch_id', '=', batch.id)
      .execute();
    await t.services.db.updateTable('batches').set({ status: 'running' }).where('id', '=', batch.id).execute();
    const placed = placedTo.length;
    // Past the lease and the dialer's next look for ended leases (its sweep interval is a day here).
    clock.advance(25 * hour);
    await pass();
    assert.deepEqual(
      (await allRecipients(t, batch.id)).map((r) => [r.status, r.attempts]),
      [['in_progress', 1]],
    );
    assert.deepEqual(placedTo.slice(placed), [to], 'dialed once, after the lease ended');
    await endCalls();
    assert.equal((await readBatch(t, batch.id)).status, 'completed');
  });
});
