/**
 * POST /v1/batches/{id}/cancel with {"hang_up": true}: besides ending the recipients not yet dialed, it asks
 * the provider to end every call of the batch under way (the simulator here), which then fail `cancelled`;
 * their recipients end cancelled, nobody else is dialed, and batch.completed counts them as cancelled. Without
 * hang_up, calls under way go on as before.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createSimulatorProvider } from '../../src/features/providers/simulator.provider.js';
import { ManualClock } from '../../src/lib/clock.js';
import { allRecipients, createBatch, dialerPass, numbers, postApi, readBatch, startHandRunDialer } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

await forEachDialect('Cancelling a batch with hang_up', (dialect) => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(Date.parse('2026-11-28T12:00:00.000Z'));
    // Calls of a minute, ringing for 2 s: the clock stays within the ring, so each cancel finds its call unanswered.
    t = await startHandRunDialer(dialect, { clock, provider: createSimulatorProvider({ clock, delayMs: 60_000 }) });
  });
  after(async () => t.close());

  const underWay = async (batchId: string) =>
    (await allRecipients(t, batchId)).filter((recipient) => recipient.status === 'in_progress').map((recipient) => recipient.call_id);

  it('ends the calls under way as cancelled, dials no one else, and batch.completed counts them cancelled', async () => {
    const batch = await createBatch(t, numbers(5, 1000), { max_concurrency: 2 });
    await dialerPass(t);
    const calls = await underWay(batch.id);
    assert.equal(calls.length, 2);

    const res = await postApi(t, `/v1/batches/${batch.id}/cancel`, { hang_up: true });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'cancelled');
    for (const id of calls) {
      const call = await until(`call ${id} to end`, async () => {
        const read = (
          await t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: { authorization: `Bearer ${t.seed.token}` } })
        ).json();
        return read.status === 'initiated' ? undefined : read;
      });
      assert.equal(call.failure_reason, 'cancelled');
      assert.ok(call.cancel_requested_at);
    }
    const ended = await until('the batch to end', async () => {
      const read = await readBatch(t, batch.id);
      return read.completed_at === null ? undefined : read;
    });
    assert.equal(ended.status, 'cancelled');
    assert.deepEqual(ended.counts, { total: 5, queued: 0, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 5 });
    await dialerPass(t);
    assert.equal((await allRecipients(t, batch.id)).filter((recipient) => recipient.call_id).length, 2);
    const event = await t.services.db
      .selectFrom('webhook_events')
      .select('payload')
      .where('type', '=', 'batch.completed')
      .where('payload', 'like', `%${batch.id}%`)
      .executeTakeFirstOrThrow();
    assert.equal(JSON.parse(event.payload).data.counts.cancelled, 5);
  });

  it('without hang_up the calls under way go on; a second cancel with hang_up then ends them', async () => {
    const batch = await createBatch(t, numbers(3, 2000), { max_concurrency: 1 });
    await dialerPass(t);
    const [callId] = await underWay(batch.id);
    assert.equal((await postApi(t, `/v1/batches/${batch.id}/cancel`, {})).statusCode, 200);
    const read = (
      await t.inject({ method: 'GET', url: `/v1/calls/${callId}`, headers: { authorization: `Bearer ${t.seed.token}` } })
    ).json();
    assert.equal(read.status, 'initiated');
    assert.equal(read.cancel_requested_at, undefined);
    const again = await postApi(t, `/v1/batches/${batch.id}/cancel`, { hang_up: true });
    assert.equal(again.statusCode, 200, again.body);
    const ended = await until('the batch to end', async () => {
      const batchNow = await readBatch(t, batch.id);
      return batchNow.completed_at === null ? undefined : batchNow;
    });
    assert.equal(ended.counts.cancelled, 3);
  });

  it('a cancel with no body, or hang_up false, is the cancel of before; a hang_up that is not a boolean is a 400', async () => {
    const batch = await createBatch(t, numbers(2, 3000), { max_concurrency: 1 });
    const bare = await t.inject({
      method: 'POST',
      url: `/v1/batches/${batch.id}/cancel`,
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(bare.statusCode, 200, bare.body);
    assert.equal((await postApi(t, `/v1/batches/${batch.id}/cancel`, { hang_up: false })).statusCode, 200);
    const wrong = await postApi(t, `/v1/batches/${batch.id}/cancel`, { hang_up: 'yes' });
    assert.equal(wrong.statusCode, 400);
    assert.equal(wrong.json().param, 'hang_up');
  });
});
