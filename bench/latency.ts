/**
 * Latency at a realistic rate: one target (bare Fastify, or POST /v1/calls on one database) in a process of
 * its own, driven by the open-loop generator (open-loop.ts) at a fixed rate; for a database, the cost of one
 * commit on it is measured first (commit-cost.ts), so a created call's latency can be read against the
 * commits it is made of.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { postgresCommitCost, sqliteCommitCost, type CommitCost, type CommitCostSettings } from './commit-cost.js';
import {
  callBody,
  logProblems,
  percentile,
  probe,
  read,
  windowCpu,
  withTarget,
  type Measurement,
  type Readings,
  type TargetSpec,
} from './measure.js';
import { runOpenLoop, type OpenLoopSettings } from './open-loop.js';

export type LatencySettings = OpenLoopSettings;

export interface LatencyMeasurement {
  readonly label: string;
  readonly kind: TargetSpec['kind'];
  readonly dialect: TargetSpec['dialect'] | null;
  readonly ratePerSecond: number;
  readonly durationS: number;
  readonly sent: number;
  readonly ok2xx: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly statusCounts: Readonly<Record<string, number>>;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly sendLagP50Ms: number;
  readonly sendLagP99Ms: number;
  readonly peakOutstanding: number;
  readonly serverCpuMsPerRequest: number;
  readonly serverCpuCores: number;
  readonly serverEventLoopBusy: number;
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
  /** Busy cores of the machine not explained by the server and the generator (PostgreSQL included). */
  readonly otherCpuCores: number | null;
  readonly loadAverageAtStart: string;
  readonly commitCosts: readonly CommitCost[];
  readonly logProblems: Measurement['logProblems'];
}

/** Commits timed per probe, at the latency run's rate. */
export const commitSamples = 400;

/** One commit on the service's database, timed before its run (none for bare Fastify and the floor). */
async function commitCostsBeside(spec: TargetSpec, settings: CommitCostSettings, workDir: string): Promise<CommitCost[]> {
  if (spec.kind !== 'app') return [];
  if (spec.dialect === 'postgres' && spec.env.DATABASE_URL) return postgresCommitCost(spec.env.DATABASE_URL, settings);
  if (spec.dialect === 'sqlite') return sqliteCommitCost(spec.env.CALLGATE_DATA_DIR ?? workDir, settings);
  return [];
}

export async function measureLatency(spec: TargetSpec, settings: LatencySettings, workDir: string, round = 1): Promise<LatencyMeasurement> {
  // A diagnostic, off by default (the profiler costs CPU, which the figures would include): a V8 CPU profile of
  // the target over the measured window, latency-<label>-round<n>.cpuprofile in this folder.
  const profileDir = process.env.BENCH_LATENCY_CPU_PROF;
  return withTarget(spec, workDir, async ({ target, postgres, tokens, logFile }) => {
    const commitCosts = await commitCostsBeside(spec, { count: commitSamples, ratePerSecond: settings.ratePerSecond }, workDir);
    await probe(target, tokens[0]!);
    const run = randomBytes(4).toString('hex');
    const body = callBody(target.agentId);
    let before: Readings | undefined;
    const result = await runOpenLoop(
      target.url,
      (n) => ({
        path: '/v1/calls',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${tokens[n % tokens.length]}`,
          'idempotency-key': `latency-${run}-${n}`,
        },
        body,
      }),
      settings,
      {
        async onWindowOpen() {
          before = await read(target, postgres);
          if (profileDir) await target.startProfile();
        },
      },
    );
    const after = await read(target, postgres);
    if (profileDir)
      await target.stopProfile(path.join(profileDir, `latency-${spec.label.replace(/[^a-z0-9]+/gi, '-')}-round${round}.cpuprofile`));
    await target.stop();
    return summarise(spec, settings, result, before!, after, commitCosts, logFile);
  });
}

function summarise(
  spec: TargetSpec,
  settings: LatencySettings,
  result: Awaited<ReturnType<typeof runOpenLoop>>,
  before: Readings,
  after: Readings,
  commitCosts: readonly CommitCost[],
  logFile: string,
): LatencyMeasurement {
  const { seconds, serverCpuUs, serverCpuCores, ownUs, machineBusy, serverEventLoopBusy } = windowCpu(before, after);
  const answered = Object.values(result.statusCounts).reduce((sum, n) => sum + n, 0);
  const ok2xx = result.latenciesMs.length;
  const m: LatencyMeasurement = {
    label: spec.label,
    kind: spec.kind,
    dialect: spec.dialect ?? null,
    ratePerSecond: settings.ratePerSecond,
    durationS: settings.durationS,
    sent: result.sent,
    ok2xx,
    non2xx: answered - ok2xx,
    errors: result.errors,
    statusCounts: result.statusCounts,
    p50Ms: percentile(result.latenciesMs, 0.5),
    p90Ms: percentile(result.latenciesMs, 0.9),
    p99Ms: percentile(result.latenciesMs, 0.99),
    maxMs: percentile(result.latenciesMs, 1),
    sendLagP50Ms: percentile(result.sendLagMs, 0.5),
    sendLagP99Ms: percentile(result.sendLagMs, 0.99),
    peakOutstanding: result.peakOutstanding,
    serverCpuMsPerRequest: answered > 0 ? serverCpuUs / 1000 / answered : 0,
    serverCpuCores,
    serverEventLoopBusy,
    loopDelayP99Ms: after.target.loopDelayP99Ms,
    loopDelayMaxMs: after.target.loopDelayMaxMs,
    otherCpuCores: machineBusy === null ? null : Math.max(0, machineBusy * os.cpus().length - serverCpuCores - ownUs / 1e6 / seconds),
    loadAverageAtStart: before.loadAverage,
    commitCosts,
    logProblems: logProblems(logFile),
  };
  const f = (n: number) => n.toFixed(2);
  process.stderr.write(
    `bench:   ${settings.ratePerSecond} req/s open loop: p50 ${f(m.p50Ms)} ms, p90 ${f(m.p90Ms)}, p99 ${f(m.p99Ms)}, max ${f(m.maxMs)}; ` +
      `send lag p99 ${f(m.sendLagP99Ms)} ms; non-2xx ${m.non2xx}, errors ${m.errors}; server ${f(m.serverCpuCores)} cores ` +
      `(${m.serverCpuMsPerRequest.toFixed(3)} ms/request), loop busy ${(m.serverEventLoopBusy * 100).toFixed(0)} %, ` +
      `loop delay p99/max ${f(m.loopDelayP99Ms)}/${f(m.loopDelayMaxMs)} ms; other ${m.otherCpuCores?.toFixed(2) ?? '-'} cores` +
      commitCosts.map((c) => `\nbench:   ${c.label}: p50 ${c.p50Ms.toFixed(3)} ms, p99 ${c.p99Ms.toFixed(3)} ms`).join('') +
      '\n',
  );
  return m;
}
