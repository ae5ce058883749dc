/**
 * `npm run bench`: the ceiling (bare Fastify), the floor (the statements a created call needs, by hand on the
 * raw drivers) and POST /v1/calls through the real service on SQLite and on PostgreSQL, each server in a process of its own with autocannon here,
 * in BENCH_ROUNDS rounds that each run every one of them in turn (the report shows each target's median round and
 * compares targets within a round: bench/rounds.ts); the same targets at a fixed rate, open loop, in as many rounds; then, as separate diagnostic runs (once), the
 * service under the same load with a CPU profile and its SQL statements counted; then the webhook dispatcher
 * (deliveries/s from a backlog, time from an outcome to its first attempt) against a local receiver on both
 * databases; then batches (POST /v1/batches of 10,000 recipients; a test-mode batch of 5,000 at max_concurrency 100
 * dialed to its end against the ideal) on both databases; writes BENCHMARKS.md. Knobs (environment): BENCH_ROUNDS (3, at least 1;
 * an odd count keeps every median a real round's), BENCH_DURATION_S (10 per target and round), BENCH_WARMUP_S (3),
 * BENCH_CONNECTIONS (50), BENCH_KEYS (1000), BENCH_PROFILE_S (5, 0 skips the profiles), BENCH_LOG_LEVEL
 * (info, the service's default), BENCH_SIMULATOR_DELAY_MS (3000, the service's default), BENCH_WEBHOOK_EVENTS
 * (20000, the dispatcher's backlog), BENCH_LATENCY_RATE (200 requests a second, open loop) for BENCH_LATENCY_S (10 per round) after
 * BENCH_LATENCY_WARMUP_S (5), BENCH_WEBHOOK_RATE (200 outcomes a second) for BENCH_WEBHOOK_LATENCY_S (10),
 * BENCH_WEBHOOK_VERIFY_EVERY (50: every 50th signature is checked), BENCH_DISPATCHER_CPU_PROF (a folder: a V8 CPU
 * profile of the dispatcher process during the throughput phase, dispatcher-<dialect>.cpuprofile), BENCH_LATENCY_CPU_PROF (a
 * folder: a V8 CPU profile of each open-loop target over its measured window, latency-<label>-round<n>.cpuprofile),
 * BENCH_PROFILE_INTERVAL_US (1000: the profiles' sampling interval; at 200 requests/s, 250 gives about six samples a request),
 * BENCH_BATCH_CREATE_RECIPIENTS (10000) posted BENCH_BATCH_CREATE_RUNS (3) times, BENCH_BATCH_RECIPIENTS (5000) dialed at
 * BENCH_BATCH_CONCURRENCY (100) with calls of BENCH_BATCH_DELAY_MS (500), BENCH_TARGETS
 * (ceiling,floor-sqlite,floor-postgres,sqlite,postgres,latency-ceiling,latency-floor-sqlite,latency-sqlite,latency-floor-postgres,
 * latency-postgres,dispatcher-sqlite,dispatcher-postgres,batches-sqlite,batches-postgres,growth-sqlite,growth-postgres; BENCH_TARGETS=batches-sqlite,batches-postgres
 * runs the batch section alone), BENCH_GROWTH_SIZES (10000,1000000: calls stored, each size added to the last) with
 * BENCH_GROWTH_REQUESTS (1200 of each kind) after BENCH_GROWTH_WARMUP (100) from BENCH_GROWTH_CONCURRENCY (4) clients and a
 * backlog of BENCH_GROWTH_BACKLOG (5000) deliveries, in BENCH_GROWTH_ROUNDS (4) rounds alternating between the sizes
 * (targets growth-sqlite,growth-postgres), BENCH_OUTPUT (BENCHMARKS.md),
 * CALLGATE_TEST_POSTGRES_URL (the PostgreSQL server's admin URL). Exits 1 when any request of any run failed,
 * or any webhook was lost, sent twice or badly signed, or a batch went over its max_concurrency or did not complete;
 * the report says which.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, postgresAdminUrl, postgresUnavailableReason, type Dialect } from '../test/support/test-database.js';
import { measureBatches, type BatchMeasurement, type BatchSettings } from './batch-bench.js';
import { batchProblems } from './batch-report.js';
import { measureDispatcher, type DispatcherMeasurement, type DispatcherSettings } from './dispatcher-bench.js';
import { dispatcherProblems } from './dispatcher-report.js';
import { measureGrowth, type GrowthMeasurement, type GrowthSettings } from './growth-bench.js';
import { growthProblems } from './growth-report.js';
import { describeMachine } from './machine.js';
import { serviceEnv } from './child-process.js';
import { measureLatency, type LatencyMeasurement, type LatencySettings } from './latency.js';
import { measure, type LoadSettings, type Measurement, type TargetSpec } from './measure.js';
import { summariseProfile } from './profile-summary.js';
import { roundsOf } from './rounds.js';
import { dialectName } from './format.js';
import { renderReport, type ProfileRun } from './report.js';

function setting(name: string, fallback: number, min = 0): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number of at least ${min}, got "${raw}"`);
  return value;
}

const load: LoadSettings = {
  durationS: setting('BENCH_DURATION_S', 10, 1),
  warmupS: setting('BENCH_WARMUP_S', 3, 0),
  connections: setting('BENCH_CONNECTIONS', 50, 1),
};
const rounds = setting('BENCH_ROUNDS', 3, 1);
if (!Number.isInteger(rounds)) throw new Error(`BENCH_ROUNDS must be a whole number, got "${process.env.BENCH_ROUNDS}"`);
const keyCount = setting('BENCH_KEYS', 1000, 1);
const profileS = setting('BENCH_PROFILE_S', 5, 0);
const logLevel = process.env.BENCH_LOG_LEVEL?.trim() || 'info';
const simulatorDelayMs = setting('BENCH_SIMULATOR_DELAY_MS', 3000, 0);
const dispatcherSettings: DispatcherSettings = {
  events: setting('BENCH_WEBHOOK_EVENTS', 20_000, 2),
  outcomesPerSecond: setting('BENCH_WEBHOOK_RATE', 200, 1),
  latencyS: setting('BENCH_WEBHOOK_LATENCY_S', 10, 1),
  verifyEvery: setting('BENCH_WEBHOOK_VERIFY_EVERY', 50, 0),
  logLevel,
};
const batchSettings: BatchSettings = {
  createRecipients: setting('BENCH_BATCH_CREATE_RECIPIENTS', 10_000, 1),
  createRuns: setting('BENCH_BATCH_CREATE_RUNS', 3, 1),
  dialRecipients: setting('BENCH_BATCH_RECIPIENTS', 5_000, 1),
  maxConcurrency: setting('BENCH_BATCH_CONCURRENCY', 100, 1),
  delayMs: setting('BENCH_BATCH_DELAY_MS', 500, 1),
  logLevel,
};
const growthSettings: GrowthSettings = {
  sizes: (process.env.BENCH_GROWTH_SIZES ?? '10000,1000000').split(',').map((size) => {
    const n = Number(size.trim());
    if (!Number.isInteger(n) || n < 5_000) throw new Error(`BENCH_GROWTH_SIZES must list whole numbers of at least 5000, got "${size}"`);
    return n;
  }),
  requests: setting('BENCH_GROWTH_REQUESTS', 1_200, 10),
  warmup: setting('BENCH_GROWTH_WARMUP', 100, 0),
  concurrency: setting('BENCH_GROWTH_CONCURRENCY', 4, 1),
  rounds: setting('BENCH_GROWTH_ROUNDS', 4, 1),
  deepPage: 50,
  backlog: setting('BENCH_GROWTH_BACKLOG', 5_000, 2),
  logLevel,
};
const latencySettings: LatencySettings = {
  ratePerSecond: setting('BENCH_LATENCY_RATE', 200, 1),
  // Per round: three rounds of 10 s give each target more measured time than the single 15 s window did.
  durationS: setting('BENCH_LATENCY_S', 10, 1),
  warmupS: setting('BENCH_LATENCY_WARMUP_S', 5, 0),
  // Enough that a request never waits for a socket at this rate unless the server stalls for over a second.
  maxConnections: 256,
  timeoutS: 10,
};
const targets = new Set(
  (
    process.env.BENCH_TARGETS ??
    'ceiling,floor-sqlite,floor-postgres,sqlite,postgres,latency-ceiling,latency-floor-sqlite,latency-sqlite,latency-floor-postgres,latency-postgres,dispatcher-sqlite,dispatcher-postgres,batches-sqlite,batches-postgres,growth-sqlite,growth-postgres'
  )
    .split(',')
    .map((t) => t.trim()),
);
const output = path.resolve(fileURLToPath(new URL('..', import.meta.url)), process.env.BENCH_OUTPUT ?? 'BENCHMARKS.md');

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-bench-'));

function appEnv(extra: Record<string, string>): Record<string, string> {
  return serviceEnv(logLevel, {
    // Nothing is refused, but every request is still counted by the limiter.
    CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000000',
    CALLGATE_SIMULATOR_DELAY_MS: String(simulatorDelayMs),
    BENCH_KEYS: String(keyCount),
    ...extra,
  });
}

/** Runs one target on a database of its own, dropped afterwards. */
async function measureOnDatabase(
  dialect: Dialect,
  label: string,
  options: { profileFile?: string; durationS?: number; kind?: 'app' | 'floor' } = {},
): Promise<Measurement> {
  const database = await createTestDatabase(dialect);
  try {
    const diagnostics: Record<string, string> = options.profileFile ? { BENCH_COUNT_STATEMENTS: '1' } : {};
    const spec: TargetSpec = { label, kind: options.kind ?? 'app', env: appEnv({ ...database.env, ...diagnostics }), dialect };
    return await measure(spec, { ...load, durationS: options.durationS ?? load.durationS }, workDir, options.profileFile);
  } finally {
    await database.drop();
  }
}

/** Runs the plan's targets in turn, `rounds` times over; each target's runs in round order, in the plan's order. */
async function inRounds<M>(plan: readonly { target: string; run: (round: number) => Promise<M> }[]): Promise<M[][]> {
  const runs: M[][] = plan.map(() => []);
  for (let round = 1; round <= rounds; round++) {
    // Every other round runs the plan backwards, so no target always runs right after another (a checkpoint
    // of PostgreSQL after the floor's writes, say, would otherwise land in the service's runs each time).
    const order = round % 2 === 1 ? [...plan.entries()] : [...plan.entries()].reverse();
    for (const [i, step] of order) {
      if (rounds > 1) process.stderr.write(`bench: round ${round} of ${rounds}, ${step.target}\n`);
      runs[i]!.push(await step.run(round));
    }
  }
  return runs;
}

async function main(): Promise<void> {
  const started = Date.now();
  const machine = await describeMachine(postgresAdminUrl);
  const postgresSkip = await postgresUnavailableReason();
  process.stderr.write(
    `bench: ${rounds} round(s); ${load.connections} connections, ${load.warmupS} s warm-up, ${load.durationS} s measured per target and round\n`,
  );

  // Each round runs every selected target once, in this order (backwards every other round), so that the targets a ratio compares (the service
  // and its floor, either and the ceiling) ran minutes apart under the same load from the rest of the machine.
  const throughputPlan: { target: string; run: () => Promise<Measurement> }[] = [];
  if (targets.has('ceiling')) {
    const spec: TargetSpec = { label: 'ceiling: bare Fastify 5, one POST route', kind: 'ceiling', env: {} };
    throughputPlan.push({ target: 'ceiling', run: () => measure(spec, load, workDir) });
  }
  const dialects = (['sqlite', 'postgres'] as const).filter((d) => targets.has(d) && !(d === 'postgres' && postgresSkip));
  for (const dialect of (['sqlite', 'postgres'] as const).filter((d) => !(d === 'postgres' && postgresSkip))) {
    const name = dialectName(dialect);
    if (targets.has(`floor-${dialect}`)) {
      const label = `floor: the statements by hand, ${name}`;
      throughputPlan.push({ target: `floor-${dialect}`, run: () => measureOnDatabase(dialect, label, { kind: 'floor' }) });
    }
    if (targets.has(dialect)) {
      throughputPlan.push({ target: dialect, run: () => measureOnDatabase(dialect, `POST /v1/calls, ${name}`) });
    }
  }
  const measurements = (await inRounds(throughputPlan)).map((runs) => roundsOf(runs, (m) => m.requestsPerSecond));

  const latencyPlan: { target: string; run: (round: number) => Promise<LatencyMeasurement> }[] = [];
  if (targets.has('latency-ceiling')) {
    const spec: TargetSpec = { label: 'bare Fastify 5, one POST route', kind: 'ceiling', env: {} };
    latencyPlan.push({ target: 'latency-ceiling', run: (round) => measureLatency(spec, latencySettings, workDir, round) });
  }
  for (const dialect of (['sqlite', 'postgres'] as const).filter((d) => !(d === 'postgres' && postgresSkip))) {
    const name = dialectName(dialect);
    const runs = [
      { target: `latency-floor-${dialect}`, label: `floor: the statements by hand, ${name}`, kind: 'floor' as const },
      { target: `latency-${dialect}`, label: `POST /v1/calls, ${name}`, kind: 'app' as const },
    ];
    for (const run of runs.filter((r) => targets.has(r.target))) {
      latencyPlan.push({
        target: run.target,
        async run(round) {
          const database = await createTestDatabase(dialect);
          try {
            const spec: TargetSpec = { label: run.label, kind: run.kind, env: appEnv(database.env), dialect };
            return await measureLatency(spec, latencySettings, workDir, round);
          } finally {
            await database.drop();
          }
        },
      });
    }
  }
  const latencies = (await inRounds(latencyPlan)).map((runs) => roundsOf(runs, (m) => m.p50Ms));

  const profiles: ProfileRun[] = [];
  if (profileS > 0) {
    for (const dialect of dialects) {
      const file = path.join(workDir, `${dialect}.cpuprofile`);
      const run = await measureOnDatabase(dialect, `profile, ${dialect}`, { profileFile: file, durationS: profileS });
      profiles.push({ dialect, file, durationS: profileS, measurement: run, summary: summariseProfile(file) });
    }
  }

  const dispatchers: DispatcherMeasurement[] = [];
  const dispatcherDialects = (['sqlite', 'postgres'] as const).filter((d) => targets.has(`dispatcher-${d}`));
  for (const dialect of dispatcherDialects.filter((d) => !(d === 'postgres' && postgresSkip))) {
    const database = await createTestDatabase(dialect);
    try {
      dispatchers.push(await measureDispatcher(database, dispatcherSettings, workDir));
    } finally {
      await database.drop();
    }
  }

  const batches: BatchMeasurement[] = [];
  const batchDialects = (['sqlite', 'postgres'] as const).filter((d) => targets.has(`batches-${d}`));
  for (const dialect of batchDialects.filter((d) => !(d === 'postgres' && postgresSkip))) {
    const database = await createTestDatabase(dialect);
    try {
      batches.push(await measureBatches(database, batchSettings, workDir));
    } finally {
      await database.drop();
    }
  }

  const growths: GrowthMeasurement[] = [];
  const growthDialects = (['sqlite', 'postgres'] as const).filter((d) => targets.has(`growth-${d}`));
  for (const dialect of growthDialects.filter((d) => !(d === 'postgres' && postgresSkip))) {
    growths.push(await measureGrowth(dialect, growthSettings, workDir));
  }

  const markdown = renderReport({
    date: new Date(),
    machine,
    load,
    rounds,
    keyCount,
    logLevel,
    simulatorDelayMs,
    measurements,
    postgresSkip,
    profiles,
    latency: latencies.length > 0 ? { settings: latencySettings, measurements: latencies, simulatorDelayMs } : null,
    dispatcher:
      dispatcherDialects.length > 0
        ? {
            settings: dispatcherSettings,
            measurements: dispatchers,
            postgresSkip: dispatcherDialects.includes('postgres') ? postgresSkip : null,
            cores: machine.cores,
          }
        : null,
    batches:
      batchDialects.length > 0
        ? {
            settings: batchSettings,
            measurements: batches,
            postgresSkip: batchDialects.includes('postgres') ? postgresSkip : null,
            cores: machine.cores,
          }
        : null,
    growth:
      growthDialects.length > 0
        ? {
            settings: growthSettings,
            measurements: growths,
            postgresSkip: growthDialects.includes('postgres') ? postgresSkip : null,
            cores: machine.cores,
          }
        : null,
    totalS: (Date.now() - started) / 1000,
  });
  fs.writeFileSync(output, markdown);
  for (const file of fs.readdirSync(workDir)) if (!file.endsWith('.cpuprofile')) fs.rmSync(path.join(workDir, file), { force: true });
  process.stderr.write(`bench: wrote ${output} in ${Math.round((Date.now() - started) / 1000)} s; CPU profiles in ${workDir}\n`);
  const failed = [
    ...measurements.flatMap((r) => r.runs),
    ...profiles.map((p) => p.measurement),
    ...latencies.flatMap((r) => r.runs),
  ].filter((m) => m.non2xx + m.errors > 0);
  if (failed.length > 0) {
    const names = [...new Set(failed.map((m) => m.label))];
    process.stderr.write(`bench: ${names.join('; ')} had non-2xx answers or errors (see the report)\n`);
    process.exitCode = 1;
  }
  for (const m of batches) {
    const problems = batchProblems(m);
    if (problems.length === 0) continue;
    process.stderr.write(`bench: ${m.label}: ${problems.join('; ')}\n`);
    process.exitCode = 1;
  }
  for (const m of growths) {
    const problems = growthProblems(m, growthSettings);
    if (problems.length === 0) continue;
    process.stderr.write(`bench: ${m.label}: ${problems.join('; ')}\n`);
    process.exitCode = 1;
  }
  for (const m of dispatchers) {
    const problems = dispatcherProblems(m);
    if (problems.length === 0) continue;
    process.stderr.write(`bench: ${m.label}: ${problems.join('; ')}\n`);
    process.exitCode = 1;
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
