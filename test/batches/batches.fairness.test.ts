/**
 * Fair dialing, pass by pass on an injected clock: batches of one account share its max_concurrent_calls (a
 * large batch created first does not starve a small one created after it), and one account's many batches
 * never keep another account's batch out of a dialer pass.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { createSimulatorProvider } from '../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../support/dialects.js';
import type { TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { allRecipients, createBatch, dialerPass, numbers, startHandRunDialer } from '../support/batch-client.js';

const callMs = 50;

await forEachDialect('Fair dialing between batches and accounts', (dialect) => {
  const clock = new ManualClock(Date.parse('2026-11-24T08:00:00.000Z'));
  const simulator = createSimulatorProvider({ clock, delayMs: callMs });
  let t: TestApp;

  before(async () => {
    t = await startHandRunDialer(dialect, { clock, provider: simulator, random: () => 0.5 });
  });
  after(async () => t.close());

  /** The calls under way end: time moves past them and the monitor records every outcome. */
  const endCalls = async () => {
    clock.advance(callMs);
    await until('every call to end', async () => {
      await t.services.callMonitor.pass();
      const open = await t.services.db.selectFrom('calls').select('id').where('status', '=', 'initiated').execute();
      return open.length === 0 ? true : undefined;
    });
  };
  const placed = async (batch: { id: string; token: string }) =>
    (await allRecipients(t, batch.id, batch.token)).filter((r) => r.status !== 'queued').length;

  it("batches of one account share its limit: a small batch created after a large one gets its part of the account's slots", async () => {
    const account = await t.newAccount();
    await t.services.db.updateTable('accounts').set({ max_concurrent_calls: 4 }).where('id', '=', account.accountId).execute();
    const large = await createBatch(t, numbers(40), { agent_id: account.agentId, max_concurrency: 10 }, { token: account.token });
    const batches = { large: { id: large.id as string, token: account.token }, small: { id: '', token: account.token } };
    const callsInProgress = async () =>
      (
        await t.services.db
          .selectFrom('calls')
          .select('id')
          .where('account_id', '=', account.accountId)
          .where('status', '=', 'initiated')
          .execute()
      ).length;
    /**
     * A dialer pass and what was placed of each batch since the last one (the passes a new batch or an ended
     * call woke included): the account's free slots, every one used.
     */
    let seen = { large: 0, small: 0 };
    const pass = async () => {
      await dialerPass(t);
      assert.equal(await callsInProgress(), 4, 'a pass uses every free slot of the account, and no more');
      const now = { large: await placed(batches.large), small: batches.small.id ? await placed(batches.small) : 0 };
      const since = { large: now.large - seen.large, small: now.small - seen.small };
      seen = now;
      return since;
    };

    assert.deepEqual(await pass(), { large: 4, small: 0 }, 'alone, the large batch takes every slot of the account');
    const small = await createBatch(t, numbers(4, 5000), { agent_id: account.agentId, max_concurrency: 10 }, { token: account.token });
    batches.small.id = small.id as string;
    assert.deepEqual(await pass(), { large: 0, small: 0 }, 'no slot is free until a call ends');
    // Two batches of one account share its 4 freed slots evenly, whichever of them the pass takes first.
    await endCalls();
    assert.deepEqual(await pass(), { large: 2, small: 2 }, 'the small batch gets half of the freed slots');
    await endCalls();
    assert.deepEqual(await pass(), { large: 2, small: 2 }, 'and is dialed in full long before the large one ends');
    // Once the small one has nothing left to dial, the large one takes every slot again.
    await endCalls();
    assert.deepEqual(await pass(), { large: 4, small: 0 });
    for (let round = 0; round < 8; round++) {
      await endCalls();
      await dialerPass(t);
    }
    assert.equal(await placed(batches.large), 40);
  });

  it("one account's many batches never keep another account's batch out of a pass", async () => {
    const busy = await t.newAccount();
    const batches = [];
    for (let i = 0; i < 25; i++) {
      batches.push(await createBatch(t, numbers(2, 6000 + 10 * i), { agent_id: busy.agentId, max_concurrency: 1 }, { token: busy.token }));
    }
    const other = await t.newAccount();
    const late = await createBatch(t, numbers(1, 7000), { agent_id: other.agentId }, { token: other.token });
    await t.services.batchDialer.pass();
    await t.services.batchDialer.idle();
    assert.equal(await placed({ id: late.id, token: other.token }), 1, "the other account's batch was dialed in the first pass");
    await endCalls();
  });
});
