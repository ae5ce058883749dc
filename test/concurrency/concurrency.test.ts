/**
 * The account concurrency limit on both databases, through the real app with an injected clock (passes of
 * the dialer and sweeps of the call monitor run by hand): set and unset by the CLI, shown on the portal's
 * overview; a POST /v1/calls over it gets 429 with Retry-After, reaches no provider and frees its
 * Idempotency-Key; a slot frees when a call's outcome is recorded, or when the lease of a holder that died
 * ends; live and test calls count apart; a batch of the account waits for a free slot, then goes on.
 * Several processes on one PostgreSQL database: concurrency.processes.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { holdCallSlot, takeSlots } from '../../src/features/concurrency/concurrency.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { setMaxConcurrentCalls } from '../../src/features/identity/accounts.service.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { createSimulatorProvider } from '../../src/features/providers/simulator.provider.js';
import { ManualClock } from '../../src/lib/clock.js';
import { allRecipients, createBatch, numbers, readBatch } from '../support/batch-client.js';
import { cliEnv, runFailing, runJson } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { signedInClient } from '../support/portal-client.js';
import { callBody, startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';

const hour = 3600_000;
const callMs = 50;
/** The Idempotency-Key lock of the test app (CALLGATE_IDEMPOTENCY_LOCK_MS): a POST's slot lease. */
const lockMs = 20_000;

await forEachDialect('Account concurrency limit', (dialect) => {
  const clock = new ManualClock(Date.parse('2026-11-24T08:00:00.000Z'));
  const simulator = createSimulatorProvider({ clock, delayMs: callMs });
  let t: TestApp;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    const never = 24 * hour;
    t = await startTestApp(dialect, {
      env: { CALLGATE_IDEMPOTENCY_LOCK_MS: String(lockMs) },
      overrides: {
        clock,
        providers: createProviderRegistry({ simulator }),
        dialerSweepIntervalMs: never,
        monitorSweepIntervalMs: never,
        dispatcherSweepIntervalMs: never,
      },
    });
    t.services.jobs.start([t.services.batchDialer.name, t.services.callMonitor.name]);
    env = cliEnv(t.database.env as Record<string, string>);
  });
  after(async () => t?.close());

  /** The simulated calls under way end: time moves past them and the monitor records their outcomes. */
  const endCalls = async () => {
    clock.advance(callMs);
    await t.services.callMonitor.pass();
  };
  const pass = async () => {
    await t.services.batchDialer.pass();
    await t.services.batchDialer.idle();
  };
  const slotsLeft = async () =>
    Number(
      (
        await t.services.db
          .selectFrom('call_slots')
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const setLimit = async (account: SeededAccount, limit: number | null) =>
    assert.ok(await setMaxConcurrentCalls(t.services.db, account.accountId, limit));
  let n = 0;
  /** A call to a number of its own. */
  const nextBody = () => callBody(t, { to: `+1415556${String(1000 + n++).padStart(4, '0')}` });
  /** POST /v1/calls with the seed's live key unless another token is given. */
  const post = (options: { token?: string; idempotencyKey?: string } = {}, body = nextBody()) => t.createCall(body, options);

  it('callgate accounts update sets and unsets max_concurrent_calls; a wrong value is a usage error', async () => {
    const id = t.seed.accountId;
    const set = await runJson(env, ['accounts', 'update', id, '--max-concurrent-calls', '3']);
    assert.equal(set.id, id);
    assert.equal(set.max_concurrent_calls, 3);
    const listed = await runJson(env, ['accounts', 'list']);
    assert.equal(listed.data.find((account: { id: string }) => account.id === id).max_concurrent_calls, 3);
    const unset = await runJson(env, ['accounts', 'update', id, '--max-concurrent-calls', 'none']);
    assert.equal(unset.max_concurrent_calls, null);

    for (const bad of ['0', '-1', '2.5', 'ten', '', '100001'])
      await runFailing(
        env,
        ['accounts', 'update', id, `--max-concurrent-calls=${bad}`],
        2,
        /--max-concurrent-calls must be a whole number/,
      );
    await runFailing(env, ['accounts', 'update', id], 2, /nothing to change/);
    await runFailing(env, ['accounts', 'update', '--max-concurrent-calls', '2'], 2, /missing argument ACCOUNT_ID/);
    await runFailing(env, ['accounts', 'update', 'acct_nope', '--max-concurrent-calls', '2'], 1, /no account with id "acct_nope"/);
    assert.equal(
      (await runJson(env, ['accounts', 'list'])).data.find((account: { id: string }) => account.id === id).max_concurrent_calls,
      null,
    );
  });

  it('over the limit, POST /v1/calls gets 429 with Retry-After, no provider call, and its key free for a retry', async () => {
    await setLimit(t.seed, 2);
    simulator.resetStats();
    assert.equal((await post()).statusCode, 201);
    assert.equal((await post()).statusCode, 201);

    const body = nextBody();
    const refused = await post({ idempotencyKey: 'limit-retry-1' }, body);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.headers['retry-after'], '5');
    const error = refused.json();
    assert.equal(error.error, 'concurrency_limit_exceeded');
    assert.match(error.message, /2 live calls in progress and a limit of 2 .*Retry-After/);
    assert.match(error.request_id, /^req_/);
    assert.equal(simulator.stats().placed, 2, 'the provider was not asked');
    assert.equal(await slotsLeft(), 0, 'a refused request holds no slot');

    // A slot frees once a call's outcome is recorded; the same key then places the call (no replay of the 429).
    await endCalls();
    const retried = await post({ idempotencyKey: 'limit-retry-1' }, body);
    assert.equal(retried.statusCode, 201, retried.body);
    assert.equal(retried.headers['idempotent-replayed'], undefined);
    assert.equal((await post()).statusCode, 201);
    assert.equal((await post()).statusCode, 429);
    // A limit lowered below the calls under way ends none of them; new ones wait.
    await setLimit(t.seed, 1);
    assert.match((await post()).json().message, /2 live calls in progress and a limit of 1 /);
    await setLimit(t.seed, 2);
    assert.equal(simulator.stats().placed, 4);
    assert.equal(await slotsLeft(), 0, 'stored calls hold their places themselves');

    // Another account, and the same account without its limit, are not held back.
    const other = await t.newAccount();
    assert.equal((await t.createCall({ agent_id: other.agentId, to: '+14155557777' }, { token: other.token })).statusCode, 201);
    await setLimit(t.seed, null);
    assert.equal((await post()).statusCode, 201);
    await endCalls();
  });

  it('live and test calls count apart, each against the limit', async () => {
    await setLimit(t.seed, 1);
    const testKey = await createApiKey(t.services.db, clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    assert.equal((await post()).statusCode, 201);
    assert.equal((await post()).statusCode, 429, 'the live slot is taken');
    assert.equal((await post({ token: testKey.token })).statusCode, 201, 'a simulated call does not take the live slot');
    const refused = await post({ token: testKey.token });
    assert.equal(refused.statusCode, 429);
    assert.match(refused.json().message, /1 test call in progress and a limit of 1/);
    await endCalls();
    assert.equal((await post({ token: testKey.token })).statusCode, 201);
    await endCalls();
  });

  it('a slot whose holder died before storing its call frees itself when its lease ends', async () => {
    await setLimit(t.seed, 1);
    // As a POST would have taken it just before its process was killed mid-call to the provider.
    const held = await holdCallSlot(t.services.db, clock, { accountId: t.seed.accountId, mode: 'live', leaseMs: lockMs });
    assert.equal(held.kind, 'held');
    assert.equal((await post()).statusCode, 429);
    clock.advance(lockMs - 1);
    assert.equal((await post()).statusCode, 429, 'still within its lease');
    clock.advance(1);
    assert.equal((await post()).statusCode, 201, 'the lease ended');
    assert.equal(await slotsLeft(), 0, 'the expired slot was dropped');
    await endCalls();

    // A holder that takes its slot again (a recipient queued again, its first slot not dropped) keeps one.
    const take = (leaseMs: number) =>
      t.services.db
        .transaction()
        .execute((trx) => takeSlots(trx, t.seed.accountId, 'live', ['rcp_again'], clock.now(), new Date(clock.now().getTime() + leaseMs)));
    await take(1_000);
    await take(lockMs);
    assert.equal(await slotsLeft(), 1);
    clock.advance(1_000);
    assert.equal((await post()).statusCode, 429, 'it holds the later lease');
    clock.advance(lockMs);
    assert.equal((await post()).statusCode, 201);
    await endCalls();
  });

  it('a batch of the account waits for a free slot instead of failing, then goes on to the end', async () => {
    await setLimit(t.seed, 2);
    simulator.resetStats();
    assert.equal((await post()).statusCode, 201);
    const batch = await createBatch(t, numbers(5, 4000), { max_concurrency: 5 });
    await pass();
    const statuses = async () => (await allRecipients(t, batch.id)).map((r) => r.status as string);
    assert.deepEqual(await statuses(), ['in_progress', 'queued', 'queued', 'queued', 'queued'], 'one slot of two was free');
    assert.equal(await slotsLeft(), 0, 'the dialed recipient gave its slot to its call');
    await pass();
    assert.equal((await statuses()).filter((s) => s === 'in_progress').length, 1, 'no more while the account is full');
    assert.equal((await post()).statusCode, 429, 'the batch call counts against the limit of single calls too');

    await endCalls();
    await pass();
    assert.deepEqual(await statuses(), ['completed', 'in_progress', 'in_progress', 'queued', 'queued']);
    for (let round = 0; round < 5 && (await readBatch(t, batch.id)).status !== 'completed'; round++) {
      await endCalls();
      await pass();
    }
    const done = await readBatch(t, batch.id);
    assert.equal(done.status, 'completed');
    assert.equal(done.counts.completed, 5);
    assert.equal(done.counts.failed, 0, 'nobody failed for want of a slot');
    assert.equal(simulator.stats().highestConcurrency, 2);
    assert.equal(simulator.stats().placed, 6);
  });

  it("the portal's overview shows the calls in progress and the limit, or no limit", async () => {
    const client = await signedInClient(t);
    await setLimit(t.seed, 4);
    assert.equal((await post()).statusCode, 201);
    let page = await client.get('/developers');
    assert.equal(page.statusCode, 200);
    assert.match(
      page.body,
      /<dt>Concurrent calls<\/dt><dd id="concurrent-calls">1 of 4 <span[^>]*>live calls in progress; test calls: 0 of 4/,
    );
    await endCalls();
    await setLimit(t.seed, null);
    page = await client.get('/developers');
    assert.match(page.body, /<dd id="concurrent-calls">no limit <span[^>]*>\(0 live, 0 test in progress\)/);
  });
});
