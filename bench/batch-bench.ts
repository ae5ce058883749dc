/**
 * The batches benchmark on one database: the service (bench/batch-process.ts) in a process of its own, this
 * one making its requests over HTTP. Two phases:
 *   create  POST /v1/batches with `createRecipients` recipients (scheduled a day ahead, so that nothing is
 *           dialed; each cancelled afterwards), `createRuns` times: the time to the whole answer, and the
 *           process's peak RSS over them;
 *   dial    a test-mode batch of `dialRecipients` recipients at `maxConcurrency`, simulated calls of
 *           `delayMs`: the time from the batch's creation to its completion (both as the service stamped
 *           them) against the ideal (recipients / max_concurrency × delay), the highest concurrency the
 *           simulator saw, CPU of the process (and of PostgreSQL's backends), and from the calls' rows where
 *           the time between one call and the next went.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Dialect, TestDatabase } from '../test/support/test-database.js';
import type { BatchMessage, BatchRequest, BatchRun } from './batch-process.js';
import { forkBenchScript, serviceEnv, type BenchChild } from './child-process.js';
import { loadAverage, machineBusyShare, machineCpuTicks, type CpuTicks } from './machine.js';
import { logProblems, percentile, postgresBackendTicks, postgresCpuCoresBetween, type Measurement } from './measure.js';
import { loopBusyBetween, type ProcessStats } from './process-stats.js';

export interface BatchSettings {
  readonly createRecipients: number;
  readonly createRuns: number;
  readonly dialRecipients: number;
  readonly maxConcurrency: number;
  /** How long each simulated call lasts (CALLGATE_SIMULATOR_DELAY_MS of the service). */
  readonly delayMs: number;
  readonly logLevel: string;
}

/** A spread of values, in ms. */
export interface Spread {
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface BatchMeasurement {
  readonly label: string;
  readonly dialect: Dialect;
  readonly createRecipients: number;
  readonly createBodyBytes: number;
  /** Time to the whole 201 answer of each POST /v1/batches, in the order made (the first on a cold process). */
  readonly createMs: readonly number[];
  readonly createPeakRssMb: number;
  /** RSS just before the first POST (after a garbage collection): what the peak rose from. */
  readonly createBaseRssMb: number;
  /** Machine load over the create phase: other processes' cores besides the service's (and PostgreSQL's). */
  readonly createOtherCpuCores: number | null;
  readonly dialRecipients: number;
  readonly maxConcurrency: number;
  readonly delayMs: number;
  /** The answer to the POST that made the dialed batch. */
  readonly dialCreateMs: number;
  /** From the batch's created_at to its completed_at. */
  readonly elapsedMs: number;
  readonly idealMs: number;
  /** idealMs / elapsedMs. */
  readonly ratio: number;
  readonly status: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly placed: number;
  readonly highestConcurrency: number;
  /** Calls in progress at the simulator on average over the run: Σ call durations / elapsed. */
  readonly meanConcurrency: number;
  /** From the batch's creation to its first call placed. */
  readonly firstPlacedMs: number;
  /** From a call's end at the simulator to its outcome recorded (what frees its slot). */
  readonly monitorLag: Spread;
  /**
   * From the outcome that freed a slot to the next call placed in it: the k-th call placed took the slot the
   * (k − max_concurrency)-th recorded outcome freed (the recipients' claim counts those active).
   */
  readonly refillLag: Spread;
  readonly processCpuCores: number;
  readonly processCpuMsPerCall: number;
  readonly loopBusy: number;
  readonly postgresCpuCores: number | null;
  readonly otherCpuCores: number | null;
  readonly loadAverageAtStart: string;
  readonly peakRssMb: number;
  readonly logProblems: Measurement['logProblems'];
}

const startTimeoutMs = 60_000;
const answerTimeoutMs = 30_000;

type Service = BenchChild<BatchMessage, BatchRequest>;

interface Readings {
  readonly atMs: number;
  readonly service: ProcessStats;
  readonly postgres: Map<number, number> | null;
  readonly machine: CpuTicks | null;
  readonly ownCpu: NodeJS.CpuUsage;
}

async function read(service: Service, postgres: pg.Client | null): Promise<Readings> {
  const { stats } = await service.ask({ type: 'stats' }, 'stats', answerTimeoutMs);
  return {
    atMs: performance.now(),
    service: stats,
    postgres: postgres ? await postgresBackendTicks(postgres) : null,
    machine: machineCpuTicks(),
    ownCpu: process.cpuUsage(),
  };
}

function cpuBetween(before: Readings, after: Readings) {
  const seconds = (after.atMs - before.atMs) / 1000;
  const serviceUs = after.service.cpuUs - before.service.cpuUs;
  const ownUs = after.ownCpu.user + after.ownCpu.system - before.ownCpu.user - before.ownCpu.system;
  const postgresCpuCores = postgresCpuCoresBetween(before.postgres, after.postgres, seconds);
  const busy = machineBusyShare(before.machine, after.machine);
  const serviceCpuCores = serviceUs / 1e6 / seconds;
  return {
    serviceUs,
    serviceCpuCores,
    loopBusy: loopBusyBetween(before.service, after.service),
    postgresCpuCores,
    otherCpuCores:
      busy === null ? null : Math.max(0, busy * os.cpus().length - serviceCpuCores - ownUs / 1e6 / seconds - (postgresCpuCores ?? 0)),
  };
}

/** `count` distinct valid numbers, none of the simulator's magic ones. */
function recipients(count: number): { to: string; reference: string; metadata: Record<string, string | number> }[] {
  return Array.from({ length: count }, (_, index) => ({
    to: `+1415${String(2_000_000 + index).padStart(7, '0')}`,
    reference: `crm-${index}`,
    metadata: { customer_name: `Customer ${index}`, appointment: '2026-11-24T09:30:00Z', n: index },
  }));
}

async function postBatch(baseUrl: string, token: string, body: string): Promise<{ ms: number; batch: { id: string } }> {
  const started = performance.now();
  const response = await fetch(`${baseUrl}/v1/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body,
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 201) throw new Error(`POST /v1/batches answered ${response.status}: ${text.slice(0, 300)}`);
  return { ms, batch: JSON.parse(text) as { id: string } };
}

async function cancelBatch(baseUrl: string, token: string, id: string): Promise<void> {
  const response = await fetch(`${baseUrl}/v1/batches/${id}/cancel`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`cancel answered ${response.status}: ${text.slice(0, 300)}`);
}

function spread(values: readonly number[]): Spread {
  const sorted = Float64Array.from(values).sort();
  const sum = values.reduce((total, value) => total + value, 0);
  return {
    meanMs: values.length > 0 ? sum / values.length : 0,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : 0,
  };
}

/** Where the time between calls went, from the calls' own timestamps (ms precision, the service's clock). */
function analyseRun(run: BatchRun, maxConcurrency: number) {
  const calls = run.calls;
  const recorded = calls.map((call) => call.recordedMs).sort((a, b) => a - b);
  const refill: number[] = [];
  for (let k = maxConcurrency; k < calls.length; k++) refill.push(calls[k]!.placedMs - recorded[k - maxConcurrency]!);
  const busyMs = calls.reduce((total, call) => total + (call.endedMs - call.placedMs), 0);
  const elapsedMs = run.completedAtMs - run.createdAtMs;
  return {
    firstPlacedMs: calls.length > 0 ? calls[0]!.placedMs - run.createdAtMs : 0,
    monitorLag: spread(calls.map((call) => call.recordedMs - call.endedMs)),
    refillLag: spread(refill),
    meanConcurrency: elapsedMs > 0 ? busyMs / elapsedMs : 0,
  };
}

export async function measureBatches(database: TestDatabase, settings: BatchSettings, workDir: string): Promise<BatchMeasurement> {
  const label = `batches, ${database.dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`;
  process.stderr.write(`bench: ${label} …\n`);
  const logFile = path.join(workDir, `${label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  const service: Service = forkBenchScript(new URL('./batch-process.ts', import.meta.url), [], {
    env: serviceEnv(settings.logLevel, { CALLGATE_SIMULATOR_DELAY_MS: String(settings.delayMs), ...database.env }),
    logFile,
    // To collect the garbage of seeding before the peak memory of the create phase is measured.
    nodeOptions: ['--expose-gc'],
  });
  const postgres = database.env.DATABASE_URL ? new pg.Client({ connectionString: database.env.DATABASE_URL }) : null;
  try {
    const { port, token, agentId } = await service.next('ready', startTimeoutMs);
    await postgres?.connect();
    const baseUrl = `http://127.0.0.1:${port}`;
    // As src/server.ts runs it with the default roles: the worker beside the API, in both phases.
    await service.ask({ type: 'start-worker' }, 'worker-started', answerTimeoutMs);

    // Create: a batch a day ahead is stored whole but never dialed.
    const createBody = JSON.stringify({
      agent_id: agentId,
      name: 'bench: create',
      recipients: recipients(settings.createRecipients),
      scheduled_at: new Date(Date.now() + 86_400_000).toISOString(),
      max_concurrency: settings.maxConcurrency,
    });
    await service.ask({ type: 'reset-peak' }, 'peak-reset', answerTimeoutMs);
    // Read right after the reset, its peak is the RSS the POSTs start from.
    const createBefore = await read(service, postgres);
    const createMs: number[] = [];
    for (let run = 0; run < settings.createRuns; run++) {
      const { ms, batch } = await postBatch(baseUrl, token, createBody);
      createMs.push(ms);
      await cancelBatch(baseUrl, token, batch.id);
    }
    const createAfter = await read(service, postgres);
    const createCpu = cpuBetween(createBefore, createAfter);

    // Dial: the batch starts at once.
    const dialBody = JSON.stringify({
      agent_id: agentId,
      name: 'bench: dial',
      recipients: recipients(settings.dialRecipients),
      max_concurrency: settings.maxConcurrency,
    });
    await sleep(500);
    const loadAverageAtStart = loadAverage();
    const before = await read(service, postgres);
    const created = await postBatch(baseUrl, token, dialBody);
    const idealMs = Math.ceil(settings.dialRecipients / settings.maxConcurrency) * settings.delayMs;
    const { run } = await service.ask(
      { type: 'wait-batch', batchId: created.batch.id, timeoutMs: idealMs * 20 },
      'batch-ended',
      idealMs * 20 + answerTimeoutMs,
    );
    const after = await read(service, postgres);
    const cpu = cpuBetween(before, after);
    await service.ask({ type: 'stop' }, 'stopped', answerTimeoutMs);
    await Promise.race([service.exited, sleep(5_000)]);

    const elapsedMs = run.completedAtMs - run.createdAtMs;
    const analysis = analyseRun(run, settings.maxConcurrency);
    const measurement: BatchMeasurement = {
      label,
      dialect: database.dialect,
      createRecipients: settings.createRecipients,
      createBodyBytes: Buffer.byteLength(createBody),
      createMs,
      createPeakRssMb: createAfter.service.peakRssBytes / 1024 ** 2,
      createBaseRssMb: createBefore.service.peakRssBytes / 1024 ** 2,
      createOtherCpuCores: createCpu.otherCpuCores,
      dialRecipients: settings.dialRecipients,
      maxConcurrency: settings.maxConcurrency,
      delayMs: settings.delayMs,
      dialCreateMs: created.ms,
      elapsedMs,
      idealMs,
      ratio: idealMs / elapsedMs,
      status: run.status,
      counts: run.counts,
      placed: run.placed,
      highestConcurrency: run.highestConcurrency,
      ...analysis,
      processCpuCores: cpu.serviceCpuCores,
      processCpuMsPerCall: run.placed > 0 ? cpu.serviceUs / 1000 / run.placed : 0,
      loopBusy: cpu.loopBusy,
      postgresCpuCores: cpu.postgresCpuCores,
      otherCpuCores: cpu.otherCpuCores,
      loadAverageAtStart,
      peakRssMb: after.service.peakRssBytes / 1024 ** 2,
      logProblems: logProblems(logFile),
    };
    process.stderr.write(
      `bench:   first call ${Math.round(measurement.firstPlacedMs)} ms after creation; POST /v1/batches of ${measurement.createRecipients} recipients: ${createMs.map((m) => Math.round(m)).join(', ')} ms ` +
        `(peak RSS ${Math.round(measurement.createPeakRssMb)} MB); ` +
        `${measurement.dialRecipients} recipients at ${measurement.maxConcurrency}: ${(elapsedMs / 1000).toFixed(2)} s ` +
        `(ideal ${idealMs / 1000} s, ratio ${measurement.ratio.toFixed(2)}), highest concurrency ${measurement.highestConcurrency}, ` +
        `mean ${measurement.meanConcurrency.toFixed(1)}; monitor lag mean ${Math.round(measurement.monitorLag.meanMs)} ms ` +
        `(p99 ${Math.round(measurement.monitorLag.p99Ms)}), refill lag mean ${Math.round(measurement.refillLag.meanMs)} ms ` +
        `(p99 ${Math.round(measurement.refillLag.p99Ms)}); process ${measurement.processCpuCores.toFixed(2)} cores ` +
        `(${measurement.processCpuMsPerCall.toFixed(2)} ms/call, loop ${Math.round(measurement.loopBusy * 100)} %), ` +
        `postgres ${measurement.postgresCpuCores?.toFixed(2) ?? '-'}, other ${measurement.otherCpuCores?.toFixed(2) ?? '-'} cores (load ${loadAverageAtStart})\n`,
    );
    return measurement;
  } finally {
    await postgres?.end().catch(() => undefined);
    service.kill();
  }
}
