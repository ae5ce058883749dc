/**
 * Drives one target with autocannon: start it, check one request, warm up, measure, read its counters
 * before and after the measured window, stop it. Every request carries a Bearer token from the target's
 * keys (round robin) and a fresh Idempotency-Key; the ceiling gets the same bytes with made-up tokens.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon, { type AutocannonOptions } from 'autocannon';
import pg from 'pg';
import type { Dialect } from '../test/support/test-database.js';
import { clockTicksPerSecond, loadAverage, machineBusyShare, machineCpuTicks, processCpuTicks, type CpuTicks } from './machine.js';
import type { CallCounts, TargetKind, TargetSample } from './serve-target.js';
import { startTarget, type Target } from './target-process.js';

export interface LoadSettings {
  readonly durationS: number;
  readonly warmupS: number;
  readonly connections: number;
}

export interface TargetSpec {
  readonly label: string;
  readonly kind: TargetKind;
  readonly env: Record<string, string>;
  readonly dialect?: Dialect;
}

export interface Measurement {
  readonly label: string;
  readonly kind: TargetKind;
  readonly dialect: Dialect | null;
  readonly durationS: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly peakRssMb: number;
  readonly ok2xx: number;
  readonly non2xx: number;
  /** Socket errors and timeouts: requests that got no answer at all. */
  readonly errors: number;
  readonly statusCounts: Readonly<Record<string, number>>;
  readonly responseBytes: number;
  /** CPU of the server process (all its threads) as a share of one core. */
  readonly serverCpuCores: number;
  /** Server CPU time per answered request: what a request costs, whatever else ran on the machine. */
  readonly serverCpuMsPerRequest: number;
  /** CPU of the PostgreSQL backends serving this target's database, in cores. */
  readonly postgresCpuCores: number | null;
  /** Connections to the target's database at the end of the window (the server's pool, rate limiter included). */
  readonly postgresConnections: number | null;
  /** Busy cores not explained by the server, autocannon or those backends: other work on the machine. */
  readonly otherCpuCores: number | null;
  /** The machine's 1/5/15-minute load averages when the measurement started. */
  readonly loadAverageAtStart: string;
  /** Share of the window the server's event loop was busy. */
  readonly serverEventLoopBusy: number;
  /** How long ready callbacks waited for the server's event loop in the window: p99 and max, ms. */
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
  /** CPU of this process (autocannon) as a share of one core. */
  readonly loadGeneratorCpuCores: number;
  /** Share of all cores of the machine that were busy (server, load generator, PostgreSQL, the rest). */
  readonly machineBusy: number | null;
  /** SQL statements per answered request, the call monitor's included (diagnostic runs only, else null). */
  readonly statementsPerRequest: number | null;
  /** The same, statement by statement (SQL text), most frequent first. */
  readonly statementMix: readonly { readonly sql: string; readonly perRequest: number }[];
  readonly calls: CallCounts | null;
  /** Log lines at warn or above, with the first one. */
  readonly logProblems: { readonly count: number; readonly first: string | null };
}

export const callBody = (agentId: string) =>
  JSON.stringify({ agent_id: agentId, to: '+14155550123', metadata: { customer_name: 'Ada', visits: 3 } });

function loadOptions(target: Target, tokens: readonly string[], durationS: number, connections: number): AutocannonOptions {
  const run = randomBytes(4).toString('hex');
  let sent = 0;
  return {
    url: target.url,
    connections,
    duration: durationS,
    timeout: 10,
    requests: [
      {
        method: 'POST',
        path: '/v1/calls',
        headers: { 'content-type': 'application/json' },
        body: callBody(target.agentId),
        setupRequest(request) {
          const n = sent++;
          request.headers = {
            ...request.headers,
            authorization: `Bearer ${tokens[n % tokens.length]}`,
            'idempotency-key': `bench-${run}-${n}`,
          };
          return request;
        },
      },
    ],
  };
}

/** One request before the load: the target must answer 201 with a created call. */
export async function probe(target: Target, token: string): Promise<number> {
  const response = await fetch(`${target.url}/v1/calls`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${token}`,
      'idempotency-key': `probe-${randomBytes(6).toString('hex')}`,
    },
    body: callBody(target.agentId),
  });
  const text = await response.text();
  if (response.status !== 201) throw new Error(`probe answered ${response.status}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text) as { status?: string };
  if (body.status !== 'initiated') throw new Error(`probe answered an unexpected body: ${text.slice(0, 300)}`);
  return Buffer.byteLength(text);
}

/** CPU ticks of every backend connected to the target's database, by pid. */
export async function postgresBackendTicks(client: pg.Client): Promise<Map<number, number>> {
  const { rows } = await client.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  const ticks = new Map<number, number>();
  for (const { pid } of rows) {
    const value = processCpuTicks(pid);
    if (value !== null) ticks.set(pid, value);
  }
  return ticks;
}

/** The CPU PostgreSQL's backends used between two postgresBackendTicks readings, in cores (null on SQLite). */
export function postgresCpuCoresBetween(
  before: ReadonlyMap<number, number> | null,
  after: ReadonlyMap<number, number> | null,
  seconds: number,
): number | null {
  if (!before || !after) return null;
  let ticks = 0;
  for (const [pid, value] of after) ticks += value - (before.get(pid) ?? value);
  return ticks / clockTicksPerSecond / seconds;
}

export function logProblems(file: string): Measurement['logProblems'] {
  let count = 0;
  let first: string | null = null;
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  for (const line of text.split('\n')) {
    if (!/"level":(40|50|60)\b/.test(line)) continue;
    count++;
    first ??= line.slice(0, 400);
  }
  return { count, first };
}

/** Everything read at one end of the measured window. */
export interface Readings {
  readonly atMs: number;
  readonly loadAverage: string;
  readonly target: TargetSample;
  readonly postgres: Map<number, number> | null;
  readonly machine: CpuTicks | null;
  readonly ownCpu: NodeJS.CpuUsage;
}

export async function read(target: Target, postgres: pg.Client | null): Promise<Readings> {
  const sample = await target.sample();
  return {
    atMs: performance.now(),
    loadAverage: loadAverage(),
    target: sample,
    postgres: postgres ? await postgresBackendTicks(postgres) : null,
    machine: machineCpuTicks(),
    ownCpu: process.cpuUsage(),
  };
}

/** A started target and what a run reads beside it. */
export interface RunningTarget {
  readonly target: Target;
  /** A client on the target's PostgreSQL database, to read its backends' CPU (null on SQLite). */
  readonly postgres: pg.Client | null;
  /** Bearer tokens to send round robin. */
  readonly tokens: readonly string[];
  readonly logFile: string;
}

/** Starts the target of `spec`, runs `run` on it, and stops it whatever happens. */
export async function withTarget<T>(spec: TargetSpec, workDir: string, run: (running: RunningTarget) => Promise<T>): Promise<T> {
  process.stderr.write(`bench: ${spec.label} …\n`);
  const logFile = path.join(workDir, `${spec.label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  const target = await startTarget(spec.kind, { env: spec.env, logFile });
  const postgres = spec.env.DATABASE_URL ? new pg.Client({ connectionString: spec.env.DATABASE_URL }) : null;
  try {
    await postgres?.connect();
    // The ceiling checks no token; it gets tokens of the same shape so both targets parse the same bytes.
    const tokens =
      target.tokens.length > 0 ? target.tokens : Array.from({ length: 1000 }, () => `cg_live_${randomBytes(32).toString('hex')}`);
    return await run({ target, postgres, tokens, logFile });
  } finally {
    await postgres?.end().catch(() => undefined);
    target.kill();
  }
}

/** What the CPUs did between two readings: the server's process, this one, the machine. */
export interface WindowCpu {
  readonly seconds: number;
  readonly serverCpuUs: number;
  readonly serverCpuCores: number;
  /** CPU of this process (the load generator), µs. */
  readonly ownUs: number;
  readonly machineBusy: number | null;
  readonly serverEventLoopBusy: number;
}

export function windowCpu(before: Readings, after: Readings): WindowCpu {
  const seconds = (after.atMs - before.atMs) / 1000;
  const serverCpuUs = after.target.cpuUs - before.target.cpuUs;
  const eluActive = after.target.eluActiveMs - before.target.eluActiveMs;
  const eluIdle = after.target.eluIdleMs - before.target.eluIdleMs;
  return {
    seconds,
    serverCpuUs,
    serverCpuCores: serverCpuUs / 1e6 / seconds,
    ownUs: after.ownCpu.user + after.ownCpu.system - before.ownCpu.user - before.ownCpu.system,
    machineBusy: machineBusyShare(before.machine, after.machine),
    serverEventLoopBusy: eluActive / Math.max(1, eluActive + eluIdle),
  };
}

/** The value below which `share` of the sorted values lie. */
export function percentile(sorted: Float64Array, share: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(share * sorted.length) - 1))]!;
}

/**
 * One autocannon run of warm-up + window over the same connections: opening 50 connections to a loaded server
 * delays their first answers by seconds (each event-loop turn serves every ready socket before accepting
 * more), a start-up effect that would otherwise land in the measured percentiles. Only answers that arrive
 * inside the window count.
 */
export async function measure(spec: TargetSpec, load: LoadSettings, workDir: string, profileFile?: string): Promise<Measurement> {
  return withTarget(spec, workDir, async ({ target, postgres, tokens, logFile }) => {
    const responseBytes = await probe(target, tokens[0]!);

    const latencies: number[] = [];
    const statusCounts: Record<string, number> = {};
    let errors = 0;
    let open = false;
    const run = autocannon(loadOptions(target, tokens, load.warmupS + load.durationS, load.connections));
    run.on('response', (_client, status, _bytes, ms) => {
      if (!open) return;
      statusCounts[status] = (statusCounts[status] ?? 0) + 1;
      if (status >= 200 && status < 300) latencies.push(ms);
    });
    run.on('reqError', () => {
      if (open) errors++;
    });
    const opened = (async () => {
      await sleep(load.warmupS * 1000);
      if (profileFile) await target.startProfile();
      const readings = await read(target, postgres);
      open = true;
      return readings;
    })();
    await run;
    open = false;
    const before = await opened;
    const after = await read(target, postgres);
    if (profileFile) await target.stopProfile(profileFile);
    const calls = await target.stop();
    return summarise(spec, { before, after, latencies, statusCounts, errors, responseBytes, calls, logFile });
  });
}

interface Window {
  readonly before: Readings;
  readonly after: Readings;
  readonly latencies: number[];
  readonly statusCounts: Record<string, number>;
  readonly errors: number;
  readonly responseBytes: number;
  readonly calls: CallCounts | null;
  readonly logFile: string;
}

function summarise(spec: TargetSpec, w: Window): Measurement {
  const { before, after } = w;
  const { seconds, serverCpuUs, serverCpuCores, ownUs, machineBusy, serverEventLoopBusy } = windowCpu(before, after);
  const ok2xx = w.latencies.length;
  const answered = Object.values(w.statusCounts).reduce((sum, n) => sum + n, 0);
  const sorted = Float64Array.from(w.latencies).sort();
  const loadGeneratorCpuCores = ownUs / 1e6 / seconds;
  const postgresCpuCores = postgresCpuCoresBetween(before.postgres, after.postgres, seconds);
  const executed = new Map<string, number>();
  for (const [sql, n] of Object.entries(after.target.statements)) {
    const text = sql.replace(/\s+/g, ' ').trim();
    executed.set(text, (executed.get(text) ?? 0) + n - (before.target.statements[sql] ?? 0));
  }
  const mix = [...executed]
    .map(([sql, n]) => ({ sql, perRequest: answered > 0 ? n / answered : 0 }))
    .filter((s) => s.perRequest > 0)
    .sort((a, b) => b.perRequest - a.perRequest);
  const measurement: Measurement = {
    label: spec.label,
    kind: spec.kind,
    dialect: spec.dialect ?? null,
    durationS: seconds,
    requestsPerSecond: ok2xx / seconds,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    p999Ms: percentile(sorted, 0.999),
    peakRssMb: after.target.peakRssBytes / 1024 ** 2,
    ok2xx,
    non2xx: answered - ok2xx,
    errors: w.errors,
    statusCounts: w.statusCounts,
    responseBytes: w.responseBytes,
    serverCpuCores,
    serverCpuMsPerRequest: answered > 0 ? serverCpuUs / 1000 / answered : 0,
    postgresCpuCores,
    postgresConnections: after.postgres ? after.postgres.size : null,
    otherCpuCores:
      machineBusy === null
        ? null
        : Math.max(0, machineBusy * os.cpus().length - serverCpuCores - loadGeneratorCpuCores - (postgresCpuCores ?? 0)),
    loadAverageAtStart: before.loadAverage,
    serverEventLoopBusy,
    loopDelayP99Ms: after.target.loopDelayP99Ms,
    loopDelayMaxMs: after.target.loopDelayMaxMs,
    loadGeneratorCpuCores,
    machineBusy,
    statementsPerRequest: mix.length > 0 ? mix.reduce((sum, s) => sum + s.perRequest, 0) : null,
    statementMix: mix,
    calls: w.calls,
    logProblems: logProblems(w.logFile),
  };
  process.stderr.write(
    `bench:   ${Math.round(measurement.requestsPerSecond)} req/s, p50 ${ms(measurement.p50Ms)} ms, p99 ${ms(measurement.p99Ms)} ms, ` +
      `peak RSS ${Math.round(measurement.peakRssMb)} MB, non-2xx ${measurement.non2xx}, errors ${measurement.errors}; ` +
      `server ${serverCpuCores.toFixed(2)} cores (${measurement.serverCpuMsPerRequest.toFixed(3)} ms/request), ` +
      `autocannon ${loadGeneratorCpuCores.toFixed(2)}, postgres ${postgresCpuCores?.toFixed(2) ?? '-'}, ` +
      `other ${measurement.otherCpuCores?.toFixed(2) ?? '-'}, statements/request ${measurement.statementsPerRequest?.toFixed(1) ?? '-'}\n`,
  );
  return measurement;
}

/** Milliseconds as the report prints them: one decimal below 10, whole above. */
export function ms(value: number): string {
  return value < 10 ? value.toFixed(1) : String(Math.round(value));
}
