/**
 * A batch recipient whose number is on the suppression list when its turn comes ends `failed` with
 * `failure_reason` `suppressed`, and the provider is never asked; the list is read at dial time, not when
 * the batch is made, so a number listed meanwhile is not called and one taken off meanwhile is. Counts and
 * `batch.completed` stay right. Passes and call-monitor sweeps are run by hand, with an injected clock.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import type { VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { createSimulatorProvider } from '../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';
import { allRecipients, createBatch, dialerPass, numbers, readBatch, startHandRunDialer } from '../support/batch-client.js';
import { deleteSuppression, postSuppression } from '../support/suppression-client.js';
import { until } from '../support/wait.js';

const callMs = 50;

await forEachDialect('Suppressed recipients of a batch', (dialect) => {
  const clock = new ManualClock(Date.parse('2026-11-24T08:00:00.000Z'));
  const simulator = createSimulatorProvider({ clock, delayMs: callMs });
  const dialed: string[] = [];
  let t: TestApp;

  before(async () => {
    const provider: VoiceProvider = {
      ...simulator,
      placeCall: (request) => {
        dialed.push(request.to);
        return simulator.placeCall(request);
      },
    };
    t = await startHandRunDialer(dialect, { clock, provider });
  });
  after(async () => t.close());

  const pass = () => dialerPass(t);
  /**
   * Passes until the batch's recipients are in these states: a batch's creation and a recipient failed at
   * its turn wake the dialer, whose own pass may run beside the test's.
   */
  const settle = (id: string, expected: readonly string[]) =>
    until(`recipients ${expected.join(', ')}`, async () => {
      await pass();
      const recipients = await allRecipients(t, id);
      return recipients.map((r) => r.status).join() === expected.join() ? recipients : undefined;
    });
  const endCalls = async () => {
    clock.advance(callMs);
    await t.services.callMonitor.pass();
  };
  const batchEvents = async (id: string) =>
    (await t.services.db.selectFrom('webhook_events').select('payload').where('type', '=', 'batch.completed').execute())
      .map((event) => JSON.parse(event.payload).data)
      .filter((data) => data.id === id);

  it('reads the list when each recipient comes up: listed meanwhile is not called, taken off meanwhile is', async () => {
    dialed.length = 0;
    const tos = numbers(4, 3000);
    // On the list when the batch is made, taken off before its turn: it is called.
    assert.equal((await postSuppression(t, { to: tos[3]! })).statusCode, 201);
    const batch = await createBatch(t, tos, { max_concurrency: 1 });
    assert.equal(batch.counts.queued, 4, 'a listed number is accepted in a batch: the list is read at its turn');

    await settle(batch.id, ['in_progress', 'queued', 'queued', 'queued']);
    assert.deepEqual(dialed, [tos[0]]);
    // Listed while the batch runs, before their turn.
    assert.equal((await postSuppression(t, { to: tos[1]!, reason: 'opted out by SMS' })).statusCode, 201);
    assert.equal((await postSuppression(t, { to: tos[2]! })).statusCode, 201);
    assert.equal((await deleteSuppression(t, tos[3]!)).statusCode, 204);

    await endCalls();
    const recipients = await settle(batch.id, ['completed', 'failed', 'failed', 'in_progress']);
    assert.deepEqual(
      recipients.map((r) => [r.status, r.failure_reason ?? null, typeof r.call_id === 'string']),
      [
        ['completed', null, true],
        ['failed', 'suppressed', false],
        ['failed', 'suppressed', false],
        ['in_progress', null, true],
      ],
    );
    assert.match(recipients[1]!.failure_message, /suppression list/);
    assert.deepEqual(dialed, [tos[0], tos[3]], 'the provider was never asked for a listed number');

    await endCalls();
    await settle(batch.id, ['completed', 'failed', 'failed', 'completed']);
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.deepEqual(done.counts, { total: 4, queued: 0, dialing: 0, in_progress: 0, completed: 2, failed: 2, cancelled: 0 });
    assert.deepEqual(await batchEvents(batch.id), [done], 'one batch.completed, after the last recipient');
    const calls = await t.services.db.selectFrom('calls').select('to_number').where('batch_id', '=', batch.id).execute();
    assert.deepEqual(calls.map((call) => call.to_number).sort(), [tos[0], tos[3]].sort());
  });

  it('a batch whose every number is listed completes without a call, with its batch.completed', async () => {
    dialed.length = 0;
    const tos = numbers(3, 3100);
    for (const to of tos) assert.equal((await postSuppression(t, { to })).statusCode, 201);
    const batch = await createBatch(t, tos, { max_concurrency: 2 });
    await settle(batch.id, ['failed', 'failed', 'failed']);
    assert.deepEqual(dialed, []);
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.completed_at, clock.now().toISOString());
    assert.deepEqual(done.counts, { total: 3, queued: 0, dialing: 0, in_progress: 0, completed: 0, failed: 3, cancelled: 0 });
    assert.deepEqual(
      (await allRecipients(t, batch.id)).map((r) => [r.failure_reason, r.attempts, r.call_ids]),
      [
        ['suppressed', 0, []],
        ['suppressed', 0, []],
        ['suppressed', 0, []],
      ],
      'attempts counts dials made: a listed number is never dialed',
    );
    assert.deepEqual(await batchEvents(batch.id), [done]);
  });
});
