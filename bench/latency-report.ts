/** The latency part of BENCHMARKS.md: the open-loop runs at a fixed rate, as ratios to bare Fastify, beside one commit. */
import type { CommitCost } from './commit-cost.js';
import { cell, dialectName, int, one, pct, two } from './format.js';
import { commitSamples, type LatencyMeasurement, type LatencySettings } from './latency.js';
import {
  latencyAnalysis,
  postgresDurableCommits,
  postgresFloorMs,
  postgresFloorSlack,
  postgresRoundTrips,
  sqliteP50MaxRatio,
  sqliteP99MaxRatio,
} from './latency-analysis.js';

export interface LatencyReportInput {
  readonly settings: LatencySettings;
  readonly measurements: readonly LatencyMeasurement[];
  readonly simulatorDelayMs: number;
}

/** Other processes busier than this during a run make its figures unrepresentative. */
const noisyOtherCores = 0.25;

const msCell = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const ratio = (value: number, base: number | undefined) => (base && base > 0 ? `${one(value / base)}×` : '–');

function failures(m: LatencyMeasurement): string {
  const count = m.non2xx + m.errors;
  if (count === 0) return '0';
  const parts = Object.entries(m.statusCounts)
    .filter(([status]) => !status.startsWith('2'))
    .map(([status, n]) => `${int(n)}× ${status}`);
  if (m.errors > 0) parts.push(`${int(m.errors)} errors/timeouts`);
  return `**${int(count)}** (${parts.join(', ')})`;
}

function commitRow(c: CommitCost): string {
  return `| ${cell(c.label)} | ${msCell(c.p50Ms)} | | ${msCell(c.p99Ms)} | | | | |`;
}

/** Rows for the report's targets table. */
export function latencyTargets(input: LatencyReportInput): string[] {
  const bare = input.measurements.find((m) => m.kind === 'ceiling');
  const rows: string[] = [];
  const verdict = (ok: boolean, m: LatencyMeasurement) =>
    m.non2xx + m.errors > 0 ? `**not met** (${int(m.non2xx + m.errors)} failed requests)` : ok ? 'met' : '**not met**';
  for (const m of input.measurements.filter((x) => x.kind === 'app')) {
    if (!bare) continue;
    const rate = `at ${int(m.ratePerSecond)} req/s`;
    if (m.dialect === 'sqlite') {
      rows.push(
        `| SQLite p50 ≤ ${sqliteP50MaxRatio}× bare Fastify ${rate} | ${msCell(m.p50Ms)} ms, ${ratio(m.p50Ms, bare.p50Ms)} | ${verdict(m.p50Ms <= sqliteP50MaxRatio * bare.p50Ms, m)} |`,
      );
      rows.push(
        `| SQLite p99 ≤ ${sqliteP99MaxRatio}× bare Fastify ${rate} | ${msCell(m.p99Ms)} ms, ${ratio(m.p99Ms, bare.p99Ms)} | ${verdict(m.p99Ms <= sqliteP99MaxRatio * bare.p99Ms, m)} |`,
      );
    } else {
      const floor = postgresFloorMs(m);
      if (!floor) continue;
      const above = m.p50Ms - bare.p50Ms;
      rows.push(
        `| PostgreSQL p50 − bare Fastify's ≈ ${postgresDurableCommits} commits + ${postgresRoundTrips} round trips (${msCell(floor.floorMs)} ms) ${rate} | ` +
          `${msCell(above)} ms | ${verdict(above <= postgresFloorSlack * floor.floorMs, m)} |`,
      );
    }
  }
  return rows;
}

export function renderLatencySection(input: LatencyReportInput): string {
  const { settings } = input;
  const bare = input.measurements.find((m) => m.kind === 'ceiling');
  const rows: string[] = [];
  for (const m of input.measurements) {
    rows.push(
      `| ${cell(m.label)} | ${msCell(m.p50Ms)} | ${msCell(m.p90Ms)} | ${msCell(m.p99Ms)} | ${msCell(m.maxMs)} | ` +
        `${m.kind === 'ceiling' ? '1×' : ratio(m.p50Ms, bare?.p50Ms)} | ${m.kind === 'ceiling' ? '1×' : ratio(m.p99Ms, bare?.p99Ms)} | ${failures(m)} |`,
    );
    rows.push(...m.commitCosts.map(commitRow));
  }
  const details = input.measurements.map(
    (m) =>
      `| ${cell(m.label)} | ${m.serverCpuMsPerRequest.toFixed(3)} | ${pct(m.serverEventLoopBusy)} | ${one(m.loopDelayP99Ms)} / ${one(m.loopDelayMaxMs)} | ` +
      `${two(m.sendLagP50Ms)} / ${two(m.sendLagP99Ms)} | ${int(m.peakOutstanding)} | ${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} (${m.loadAverageAtStart}) |`,
  );
  const noisiest = Math.max(0, ...input.measurements.map((m) => m.otherCpuCores ?? 0));
  const contention =
    noisiest > noisyOtherCores
      ? `\n> **The machine was shared during these runs**: other processes used up to ${two(noisiest)} cores (last column), so every figure here, bare ` +
        `Fastify's included, is higher and noisier than on an idle machine; compare the targets with bare Fastify of the same run.\n`
      : '';
  const names = [...new Set(input.measurements.filter((m) => m.dialect).map((m) => dialectName(m.dialect!)))].join(' and ');
  return `## Latency at ${int(settings.ratePerSecond)} requests/s (open loop)

### Method

- What an integrator feels at a realistic rate, rather than at saturation: requests leave on a fixed schedule,
  one every ${two(1000 / settings.ratePerSecond)} ms, whatever earlier answers are doing (bench/open-loop.ts: node:http, a keep-alive
  agent of up to ${int(settings.maxConnections)} connections, so a slow answer never holds back the next request), and each latency
  is counted from the moment its request was due, so a stall counts for every request it delays (no
  coordinated omission; autocannon's closed loop, and its overallRate, which sends in bursts, would hide it).
  ${settings.warmupS} s of warm-up (every API key makes its once-a-minute \`last_used_at\` write), then ${settings.durationS} s measured.
- Each target on a fresh database and in a process of its own, as in the throughput runs: bare Fastify (the
  ceiling's route), the floor (the statements a created call needs, by hand on the raw driver), and POST /v1/calls
  with the worker running (the call monitor ends each simulated call ${int(input.simulatorDelayMs)} ms after it starts, during the
  window), each request with the next of the 1,000 keys and a fresh Idempotency-Key.
- **One commit** on ${names || 'each database'}, measured on the service's database (SQLite: a file beside it) just before
  its run, ${int(commitSamples)} times at the same rate: one INSERT in a transaction of its own (bench/commit-cost.ts); on
  SQLite also with \`synchronous = FULL\`, on PostgreSQL also a round trip that commits nothing.
- Send lag is how late the generator got a request out; it is inside every latency.

| target | p50 ms | p90 ms | p99 ms | max ms | p50 to bare | p99 to bare | non-2xx |
|---|---|---|---|---|---|---|---|
${rows.join('\n')}

| target | server CPU, ms / request | event loop busy | event-loop delay p99 / max ms | send lag p50 / p99 ms | most requests outstanding | other processes, cores (load avg) |
|---|---|---|---|---|---|---|
${details.join('\n')}
${contention}
${latencyAnalysis(input)}`;
}
