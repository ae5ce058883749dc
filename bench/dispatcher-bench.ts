/**
 * The webhook dispatcher benchmark on one database: the receiver (bench/receiver-process.ts) and the service's
 * dispatcher (bench/dispatcher-process.ts) each in a process of their own. Two phases:
 *   throughput  a backlog of events, one delivery each, is written before the worker starts; the worker then
 *               sends them all; deliveries/s is counted at the receiver from the first arrival to the last;
 *   latency     with the worker idle, call outcomes are recorded at a steady rate through recordOutcome; each
 *               event's first arrival at the receiver minus the moment its outcome's transaction committed.
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Dialect, TestDatabase } from '../test/support/test-database.js';
import { forkBenchScript, type BenchChild } from './child-process.js';
import type { DispatcherMessage, DispatcherRequest } from './dispatcher-process.js';
import { machineBusyShare, machineCpuTicks, type CpuTicks } from './machine.js';
import { logProblems, percentile, postgresBackendTicks, postgresCpuCoresBetween, type Measurement } from './measure.js';
import { loopBusyBetween, type ProcessStats } from './process-stats.js';
import type { ReceiverMessage, ReceiverRequest } from './receiver-process.js';

export interface DispatcherSettings {
  /** Events in the backlog of the throughput phase, one delivery each. */
  readonly events: number;
  /** Outcomes recorded per second in the latency phase, and for how long. */
  readonly outcomesPerSecond: number;
  readonly latencyS: number;
  /** Every n-th request's signature is checked at the receiver (0: none). */
  readonly verifyEvery: number;
  readonly logLevel: string;
  /** When set, the throughput phase runs under the V8 CPU profiler and the profile is written here. */
  readonly profileFile?: string;
}

export interface DispatcherMeasurement {
  readonly label: string;
  readonly dialect: Dialect;
  /** Attempts the worker makes at once (CALLGATE_WEBHOOK_CONCURRENCY). */
  readonly concurrency: number;
  readonly events: number;
  /** Time to write the backlog (not part of any figure). */
  readonly backlogMs: number;
  /** Distinct webhook-ids that arrived in the throughput phase. */
  readonly delivered: number;
  /** (delivered - 1) / time from the first arrival to the last. */
  readonly deliveriesPerSecond: number;
  /** From the worker's start to the first arrival, and to the moment every result was written. */
  readonly firstArrivalMs: number;
  readonly allRecordedMs: number;
  /** Deliveries by status and attempt rows at the end of the throughput phase. */
  readonly deliveries: Readonly<Record<string, number>>;
  readonly attempts: number;
  /** Requests for a webhook-id that had arrived before, both phases. */
  readonly repeats: number;
  readonly dispatcherCpuCores: number;
  readonly dispatcherCpuMsPerDelivery: number;
  readonly dispatcherLoopBusy: number;
  readonly receiverCpuCores: number;
  readonly postgresCpuCores: number | null;
  readonly otherCpuCores: number | null;
  readonly outcomes: number;
  readonly outcomesPerSecond: number;
  /** Outcomes whose event never arrived. */
  readonly missing: number;
  readonly firstAttemptP50Ms: number;
  readonly firstAttemptP99Ms: number;
  readonly firstAttemptMaxMs: number;
  /** How late the producer started an outcome at worst (its own event loop was busy). */
  readonly producerLagMaxMs: number;
  readonly signaturesVerified: number;
  readonly signatureFailures: number;
  readonly firstSignatureFailure: string | null;
  readonly peakRssMb: number;
  readonly logProblems: Measurement['logProblems'];
}

const startTimeoutMs = 60_000;
const answerTimeoutMs = 30_000;

type Receiver = BenchChild<ReceiverMessage, ReceiverRequest>;
type Dispatcher = BenchChild<DispatcherMessage, DispatcherRequest>;

interface Readings {
  readonly atMs: number;
  readonly dispatcher: ProcessStats;
  readonly receiver: ProcessStats;
  readonly postgres: Map<number, number> | null;
  readonly machine: CpuTicks | null;
  readonly ownCpu: NodeJS.CpuUsage;
}

async function read(dispatcher: Dispatcher, receiver: Receiver, postgres: pg.Client | null): Promise<Readings> {
  const [d, r] = await Promise.all([
    dispatcher.ask({ type: 'stats' }, 'stats', answerTimeoutMs),
    receiver.ask({ type: 'stats' }, 'stats', answerTimeoutMs),
  ]);
  return {
    atMs: performance.now(),
    dispatcher: d.stats,
    receiver: r.stats,
    postgres: postgres ? await postgresBackendTicks(postgres) : null,
    machine: machineCpuTicks(),
    ownCpu: process.cpuUsage(),
  };
}

function cpuBetween(before: Readings, after: Readings, delivered: number) {
  const seconds = (after.atMs - before.atMs) / 1000;
  const dispatcherUs = after.dispatcher.cpuUs - before.dispatcher.cpuUs;
  const receiverUs = after.receiver.cpuUs - before.receiver.cpuUs;
  const ownUs = after.ownCpu.user + after.ownCpu.system - before.ownCpu.user - before.ownCpu.system;
  const postgresCpuCores = postgresCpuCoresBetween(before.postgres, after.postgres, seconds);
  const busy = machineBusyShare(before.machine, after.machine);
  const dispatcherCpuCores = dispatcherUs / 1e6 / seconds;
  const receiverCpuCores = receiverUs / 1e6 / seconds;
  return {
    dispatcherCpuCores,
    dispatcherCpuMsPerDelivery: delivered > 0 ? dispatcherUs / 1000 / delivered : 0,
    dispatcherLoopBusy: loopBusyBetween(before.dispatcher, after.dispatcher),
    receiverCpuCores,
    postgresCpuCores,
    otherCpuCores:
      busy === null
        ? null
        : Math.max(0, busy * os.cpus().length - dispatcherCpuCores - receiverCpuCores - ownUs / 1e6 / seconds - (postgresCpuCores ?? 0)),
  };
}

/** Waits for `count` distinct webhook-ids at the receiver while `action` runs; false when they never came. */
async function arrivalsDuring(receiver: Receiver, count: number, timeoutMs: number, action: () => Promise<void>): Promise<boolean> {
  const reached = receiver.ask({ type: 'wait', count }, 'reached', timeoutMs).then(
    () => true,
    () => false,
  );
  await action();
  return reached;
}

async function throughput(dispatcher: Dispatcher, receiver: Receiver, postgres: pg.Client | null, events: number, profileFile?: string) {
  if (profileFile) await dispatcher.ask({ type: 'profile-start' }, 'profile-started', answerTimeoutMs);
  const before = await read(dispatcher, receiver, postgres);
  let startedAt = 0;
  const complete = await arrivalsDuring(receiver, events, 120_000, async () => {
    startedAt = (await dispatcher.ask({ type: 'start-worker' }, 'worker-started', answerTimeoutMs)).atMs;
  });
  if (!complete) process.stderr.write(`bench:   not every delivery arrived within 120 s\n`);
  const after = await read(dispatcher, receiver, postgres);
  if (profileFile) await dispatcher.ask({ type: 'profile-stop', file: profileFile }, 'profile-stopped', answerTimeoutMs);
  const drained = await dispatcher.ask({ type: 'drain' }, 'drained', 120_000);
  const { collected } = await receiver.ask({ type: 'collect' }, 'collected', answerTimeoutMs);
  const times = collected.firstArrivals.map(([, at]) => at).sort((a, b) => a - b);
  const first = times[0] ?? startedAt;
  const last = times[times.length - 1] ?? startedAt;
  return {
    collected,
    delivered: times.length,
    deliveriesPerSecond: times.length > 1 ? (times.length - 1) / ((last - first) / 1000) : 0,
    firstArrivalMs: first - startedAt,
    allRecordedMs: drained.atMs - startedAt,
    deliveries: drained.deliveries,
    attempts: drained.attempts,
    ...cpuBetween(before, after, times.length),
  };
}

async function latency(dispatcher: Dispatcher, receiver: Receiver, settings: DispatcherSettings) {
  const count = Math.round(settings.outcomesPerSecond * settings.latencyS);
  await dispatcher.ask({ type: 'prepare-calls', count }, 'calls-prepared', answerTimeoutMs);
  // Let the worker go idle (the insert woke nothing, but the throughput phase's last flush may still be settling).
  await sleep(1_000);
  let done: Extract<DispatcherMessage, { type: 'outcomes-done' }> | undefined;
  await arrivalsDuring(receiver, count, settings.latencyS * 1000 + 30_000, async () => {
    done = await dispatcher.ask(
      { type: 'outcomes', perSecond: settings.outcomesPerSecond },
      'outcomes-done',
      settings.latencyS * 1000 + 60_000,
    );
  });
  await dispatcher.ask({ type: 'drain' }, 'drained', 60_000);
  const { collected } = await receiver.ask({ type: 'collect' }, 'collected', answerTimeoutMs);
  const arrivals = new Map(collected.firstArrivals);
  const delays: number[] = [];
  for (const [eventId, committedAt] of done!.commits) {
    const arrivedAt = arrivals.get(eventId);
    if (arrivedAt !== undefined) delays.push(arrivedAt - committedAt);
  }
  const sorted = Float64Array.from(delays).sort();
  return {
    collected,
    outcomes: done!.commits.length,
    missing: done!.commits.length - delays.length,
    firstAttemptP50Ms: percentile(sorted, 0.5),
    firstAttemptP99Ms: percentile(sorted, 0.99),
    firstAttemptMaxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : 0,
    producerLagMaxMs: done!.lagMaxMs,
  };
}

export async function measureDispatcher(
  database: TestDatabase,
  settings: DispatcherSettings,
  workDir: string,
): Promise<DispatcherMeasurement> {
  const label = `webhook dispatcher, ${database.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`;
  process.stderr.write(`bench: ${label} …\n`);
  const logFile = path.join(workDir, `${label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  const receiver: Receiver = forkBenchScript(new URL('./receiver-process.ts', import.meta.url), [], {
    env: {},
    logFile: path.join(workDir, 'receiver.log'),
  });
  let dispatcher: Dispatcher | undefined;
  const postgres = database.env.DATABASE_URL ? new pg.Client({ connectionString: database.env.DATABASE_URL }) : null;
  try {
    const { port } = await receiver.next('ready', startTimeoutMs);
    dispatcher = forkBenchScript(new URL('./dispatcher-process.ts', import.meta.url), [], {
      env: {
        DATABASE_URL: '',
        REDIS_URL: '',
        CALLGATE_DEMO_SEED: 'false',
        CALLGATE_ROLES: 'worker',
        CALLGATE_LOG_LEVEL: settings.logLevel,
        CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
        BENCH_RECEIVER_URL: `http://127.0.0.1:${port}/webhooks`,
        ...database.env,
      },
      logFile,
      // To collect the garbage of writing the backlog before the worker's peak memory is measured.
      nodeOptions: ['--expose-gc'],
    });
    const { secret, concurrency } = await dispatcher.next('ready', startTimeoutMs);
    await receiver.ask({ type: 'configure', secret, verifyEvery: settings.verifyEvery }, 'configured', answerTimeoutMs);
    await postgres?.connect();

    const backlog = await dispatcher.ask(
      { type: 'backlog', events: settings.events, batchSize: 500, parallel: database.dialect === 'postgres' ? 8 : 1 },
      'backlog-done',
      300_000,
    );
    const profileDir = process.env.BENCH_DISPATCHER_CPU_PROF;
    const profileFile =
      settings.profileFile ?? (profileDir ? path.join(profileDir, `dispatcher-${database.dialect}.cpuprofile`) : undefined);
    const t = await throughput(dispatcher, receiver, postgres, settings.events, profileFile);
    const l = await latency(dispatcher, receiver, settings);
    const { stats } = await dispatcher.ask({ type: 'stats' }, 'stats', answerTimeoutMs);
    await dispatcher.ask({ type: 'stop' }, 'stopped', answerTimeoutMs);
    await receiver.ask({ type: 'stop' }, 'stopped', answerTimeoutMs);
    await Promise.race([Promise.all([dispatcher.exited, receiver.exited]), sleep(5_000)]);

    const measurement: DispatcherMeasurement = {
      label,
      dialect: database.dialect,
      concurrency,
      events: settings.events,
      backlogMs: backlog.ms,
      delivered: t.delivered,
      deliveriesPerSecond: t.deliveriesPerSecond,
      firstArrivalMs: t.firstArrivalMs,
      allRecordedMs: t.allRecordedMs,
      deliveries: t.deliveries,
      attempts: t.attempts,
      repeats: t.collected.repeats + l.collected.repeats,
      dispatcherCpuCores: t.dispatcherCpuCores,
      dispatcherCpuMsPerDelivery: t.dispatcherCpuMsPerDelivery,
      dispatcherLoopBusy: t.dispatcherLoopBusy,
      receiverCpuCores: t.receiverCpuCores,
      postgresCpuCores: t.postgresCpuCores,
      otherCpuCores: t.otherCpuCores,
      outcomes: l.outcomes,
      outcomesPerSecond: settings.outcomesPerSecond,
      missing: l.missing,
      firstAttemptP50Ms: l.firstAttemptP50Ms,
      firstAttemptP99Ms: l.firstAttemptP99Ms,
      firstAttemptMaxMs: l.firstAttemptMaxMs,
      producerLagMaxMs: l.producerLagMaxMs,
      signaturesVerified: t.collected.verified + l.collected.verified,
      signatureFailures: t.collected.verifyFailures + l.collected.verifyFailures,
      firstSignatureFailure: t.collected.firstVerifyFailure ?? l.collected.firstVerifyFailure,
      peakRssMb: stats.peakRssBytes / 1024 ** 2,
      logProblems: logProblems(logFile),
    };
    process.stderr.write(
      `bench:   ${Math.round(measurement.deliveriesPerSecond)} deliveries/s (${measurement.delivered} of ${measurement.events}, ` +
        `backlog written in ${(measurement.backlogMs / 1000).toFixed(1)} s, all recorded ${(measurement.allRecordedMs / 1000).toFixed(2)} s after start), ` +
        `dispatcher ${measurement.dispatcherCpuCores.toFixed(2)} cores (${measurement.dispatcherCpuMsPerDelivery.toFixed(3)} ms/delivery, loop ${Math.round(measurement.dispatcherLoopBusy * 100)} %), ` +
        `receiver ${measurement.receiverCpuCores.toFixed(2)}, postgres ${measurement.postgresCpuCores?.toFixed(2) ?? '-'}; ` +
        `first attempt p50 ${measurement.firstAttemptP50Ms.toFixed(1)} ms, p99 ${measurement.firstAttemptP99Ms.toFixed(1)} ms, max ${measurement.firstAttemptMaxMs.toFixed(1)} ms ` +
        `(${measurement.outcomes} outcomes, ${measurement.missing} missing); signatures ${measurement.signaturesVerified} verified, ${measurement.signatureFailures} failed; ` +
        `repeats ${measurement.repeats}; peak RSS ${Math.round(measurement.peakRssMb)} MB\n`,
    );
    return measurement;
  } finally {
    await postgres?.end().catch(() => undefined);
    dispatcher?.kill();
    receiver.kill();
  }
}
