/**
 * The worker's job runner on both databases: two runners on one database never claim one row, a lease
 * that ends gives the row back, a wake-up (NOTIFY from another connection on PostgreSQL) runs a job at
 * once, a shutdown waits for unfinished work only until its deadline, and "now" is the injected clock's.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { claimDueCalls } from '../../src/features/calls/calls.repository.js';
import {
  createLocalNotifier,
  createPostgresNotifier,
  notifyDeliveryWorkers,
} from '../../src/features/webhook-delivery/delivery-notifier.js';
import { JobRunner, periodicJob, type Job, type JobContext } from '../../src/jobs/job-runner.js';
import { ManualClock, addMs, isoTimestamp, systemClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { requestLogRow, startTestApp, type TestApp } from '../support/test-app.js';

const silent = {
  level: 'silent',
  info() {},
  warn() {},
  error() {},
  debug() {},
  trace() {},
  fatal() {},
  child: () => silent,
  silent() {},
} as never;

/** Polls until `check` holds, or fails after `ms`. */
async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A job that counts its passes and what each saw as now. */
function countingJob(name: string, intervalMs = 3_600_000): Job & { passes: Date[] } {
  const passes: Date[] = [];
  return { name, label: name, intervalMs, runAtStart: false, passes, runOnce: async ({ now }: JobContext) => void passes.push(now) };
}

await forEachDialect('Job runner', (dialect) => {
  let t: TestApp;
  let second: DatabaseHandle;

  before(async () => {
    t = await startTestApp(dialect, { startWorker: true, overrides: { purgeIntervalMs: 20 } });
    // Another connection pool on the same database, as another worker process would have.
    second = openDatabase(t.services.config.database);
  });
  after(async () => {
    await second?.destroy();
    await t?.close();
  });

  // A call that has not ended has none of these yet.
  const outcomeFields = Object.fromEntries(
    ['started_at', 'ended_at', 'duration_seconds', 'transcript_summary', 'failure_reason', 'failure_message', 'failed_at'].map((column) => [
      column,
      null,
    ]),
  ) as Record<
    'started_at' | 'ended_at' | 'duration_seconds' | 'transcript_summary' | 'failure_reason' | 'failure_message' | 'failed_at',
    null
  >;

  const insertDueCalls = async (count: number, dueAt: string): Promise<string[]> => {
    const prefix = `call_job_${Math.random().toString(36).slice(2, 8)}_`;
    const rows = Array.from({ length: count }, (_, i) => ({
      id: `${prefix}${String(i).padStart(4, '0')}`,
      account_id: t.seed.accountId,
      api_key_id: t.seed.keyId,
      agent_id: t.seed.agentId,
      agent_ref: t.seed.agentId,
      mode: 'live' as const,
      provider: 'simulator' as const,
      provider_conversation_id: `${prefix}conv_${i}`,
      to_number: '+14155550100',
      metadata: null,
      status: 'initiated' as const,
      created_at: dueAt,
      updated_at: dueAt,
      next_check_at: dueAt,
      ...outcomeFields,
    }));
    for (let i = 0; i < rows.length; i += 100)
      await t.services.db
        .insertInto('calls')
        .values(rows.slice(i, i + 100))
        .execute();
    return rows.map((row) => row.id);
  };

  it('two runners on one database claim every due row once between them', async () => {
    const clock = new ManualClock(Date.parse('2031-01-01T00:00:00.000Z'));
    const ids = await insertDueCalls(400, isoTimestamp(clock.now()));
    const mine = new Set(ids);
    const claimedBy: string[][] = [[], []];
    const runners = [t.services.db, second.db].map((db, index) => {
      const runner = new JobRunner({ clock, logger: silent });
      const handle = runner.add({
        name: 'claimer',
        label: 'claimer',
        intervalMs: 3_600_000,
        runAtStart: false,
        // Small batches, so that the two runners' claims interleave.
        runOnce: async ({ now }) => {
          const due = await claimDueCalls(db, isoTimestamp(now), isoTimestamp(addMs(now, 30_000)), 7);
          claimedBy[index]!.push(...due.map((call) => call.id).filter((id) => mine.has(id)));
          return { more: due.length === 7 };
        },
      });
      runner.start();
      return { runner, handle };
    });
    // Both passes at once; each goes on while its batches are full.
    await Promise.all(runners.map(({ handle }) => handle.run()));
    await Promise.all(runners.map(({ runner }) => runner.stop()));
    const all = [...claimedBy[0]!, ...claimedBy[1]!];
    assert.equal(new Set(all).size, all.length, 'no row was claimed by both runners');
    assert.equal(all.length, ids.length, 'every due row was claimed');
    assert.ok(
      claimedBy[0]!.length > 0 && claimedBy[1]!.length > 0,
      `both runners claimed: ${claimedBy[0]!.length} and ${claimedBy[1]!.length}`,
    );
  });

  it('a claimed row comes back once its lease has ended, not before', async () => {
    const clock = new ManualClock(Date.parse('2032-01-01T00:00:00.000Z'));
    const ids = new Set(await insertDueCalls(5, isoTimestamp(clock.now())));
    const claim = async (db: typeof t.services.db) => {
      const now = clock.now();
      const due = await claimDueCalls(db, isoTimestamp(now), isoTimestamp(addMs(now, 30_000)), 1_000);
      return due.filter((call) => ids.has(call.id)).length;
    };
    assert.equal(await claim(t.services.db), 5);
    clock.advance(29_000);
    assert.equal(await claim(second.db), 0, 'still under lease');
    clock.advance(1_001);
    assert.equal(await claim(second.db), 5, 'the lease ended: another runner takes them');
  });

  it('a wake-up signal runs its job at once, not at the next interval', async () => {
    const local = createLocalNotifier();
    const runner = new JobRunner({ clock: systemClock, logger: silent });
    const job = countingJob('woken');
    runner.add(job, local);
    runner.start();
    try {
      local.notify();
      await waitFor(() => job.passes.length === 1, 2_000, 'the pass a local wake-up asks for');
      if (dialect === 'postgres' && t.services.database.dialect === 'postgres' && t.services.config.database.dialect === 'postgres') {
        // NOTIFY sent on another connection (another process) reaches this runner through LISTEN.
        const notifier = createPostgresNotifier(t.services.database.pool, t.services.config.database.url, silent);
        const remote = countingJob('woken-remotely');
        runner.add(remote, notifier);
        runner.start([remote.name]);
        try {
          await waitFor(
            async () => {
              if (second.dialect === 'postgres') await notifyDeliveryWorkers(second.pool);
              return remote.passes.length > 0;
            },
            5_000,
            'the pass a NOTIFY asks for',
          );
        } finally {
          await notifier.close();
        }
      }
    } finally {
      await runner.stop();
      await local.close();
    }
  });

  it('a shutdown waits for unfinished work until its deadline, then hands it back', async () => {
    const runner = new JobRunner({ clock: systemClock, logger: silent });
    let handedBack = 0;
    runner.add({
      name: 'hanging',
      label: 'hanging',
      intervalMs: 3_600_000,
      runOnce: async () => undefined,
      pending: () => new Promise(() => undefined),
      handBack: async () => void handedBack++,
    });
    runner.start();
    const startedAt = Date.now();
    await runner.stop(300);
    const took = Date.now() - startedAt;
    assert.ok(took >= 250 && took < 3_000, `stop took ${took} ms`);
    assert.equal(handedBack, 1);
    await runner.stop(300);
    assert.equal(handedBack, 1, 'stopping again does nothing more');
  });

  it('passes see the injected clock, and a look asked for at a moment of that clock comes at once', async () => {
    // Years ahead of the system clock: a runner timing looks by Date.now() would leave this one to the interval.
    const clock = new ManualClock(Date.parse('2040-06-01T12:00:00.000Z'));
    const runner = new JobRunner({ clock, logger: silent });
    const job = countingJob('timed');
    const handle = runner.add(job);
    runner.start();
    try {
      handle.wakeAt(addMs(clock.now(), 20));
      await waitFor(() => job.passes.length === 1, 2_000, 'the pass asked for 20 ms ahead');
      assert.equal(job.passes[0]!.toISOString(), '2040-06-01T12:00:00.000Z');
      // Far off by that clock: left to the interval.
      handle.wakeAt(addMs(clock.now(), 3_600_000));
      clock.advance(5_000);
      await handle.run();
      assert.equal(job.passes.length, 2);
      assert.equal(job.passes[1]!.toISOString(), '2040-06-01T12:00:05.000Z');
    } finally {
      await runner.stop();
    }
  });

  it('a burst of looks shares one pass at the latest of them, not at the end of a time slot; looks further apart get their own', async () => {
    // The clock stands still: every delay is the runner's own arithmetic from this moment.
    const clock = new ManualClock(Date.parse('2040-06-01T12:00:00.001Z'));
    const runner = new JobRunner({ clock, logger: silent, wakeGranularityMs: 10_000 });
    const job = countingJob('burst');
    const handle = runner.add(job);
    runner.start();
    try {
      // A batch's calls placed together end within a few ms of each other; the later looks are asked for
      // after the first one's timer was set, so that timer has to wait for them.
      for (const ms of [20, 22, 21, 25]) handle.wakeAt(addMs(clock.now(), ms));
      // Slots of 10 s would hold this pass until 12:00:10; the group's timer fires 25 ms from now.
      await waitFor(() => job.passes.length === 1, 5_000, 'the pass of the burst');
      await handle.run();
      assert.equal(job.passes.length, 2, 'one pass for the four looks, then the one asked for');
    } finally {
      await runner.stop();
    }

    const spaced = new JobRunner({ clock, logger: silent, wakeGranularityMs: 50 });
    const spacedJob = countingJob('spaced');
    const spacedHandle = spaced.add(spacedJob);
    spaced.start();
    try {
      // More than the granularity apart: the first does not wait for the second.
      spacedHandle.wakeAt(addMs(clock.now(), 10));
      spacedHandle.wakeAt(addMs(clock.now(), 300));
      await waitFor(() => spacedJob.passes.length === 2, 5_000, 'a pass for each look');
    } finally {
      await spaced.stop();
    }
  });

  it('the worker role purges old request-log rows and expired idempotency records by itself', async () => {
    const old = new Date(t.services.clock.now().getTime() - 30 * 24 * 60 * 60 * 1000).toISOString();
    await t.services.db
      .insertInto('request_logs')
      .values(requestLogRow(t.seed, 'req_job_purge_old', old))
      .execute();
    await waitFor(
      async () =>
        (await t.services.db.selectFrom('request_logs').select('id').where('id', '=', 'req_job_purge_old').executeTakeFirst()) ===
        undefined,
      5_000,
      'the request-log purge job',
    );
    await t.services.db
      .insertInto('idempotency_keys')
      .values({
        api_key_id: t.seed.keyId,
        route: 'POST /v1/calls',
        idempotency_key: 'job-purge-expired',
        request_hash: 'x',
        state: 'completed',
        owner: 'o',
        response_status: 201,
        response_body: '{}',
        response_headers: null,
        locked_until: old,
        expires_at: old,
        created_at: old,
      })
      .execute();
    await waitFor(
      async () =>
        (await t.services.db
          .selectFrom('idempotency_keys')
          .select('idempotency_key')
          .where('idempotency_key', '=', 'job-purge-expired')
          .executeTakeFirst()) === undefined,
      5_000,
      'the idempotency purge job',
    );
  });

  it('periodic jobs run on their interval, and a failing pass is logged and tried again', async () => {
    const runner = new JobRunner({ clock: systemClock, logger: silent });
    let runs = 0;
    runner.add(
      periodicJob({
        name: 'flaky',
        label: 'flaky',
        intervalMs: 20,
        run: async () => {
          runs++;
          if (runs === 1) throw new Error('first run fails');
        },
      }),
    );
    runner.start();
    try {
      await waitFor(() => runs >= 3, 3_000, 'three runs of the periodic job');
    } finally {
      await runner.stop();
    }
  });
});
