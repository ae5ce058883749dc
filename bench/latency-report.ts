/** The latency part of BENCHMARKS.md: the open-loop runs at a fixed rate, as ratios to bare Fastify, beside one commit. */
import type { CommitCost } from './commit-cost.js';
import { cell, dialectName, int, one, pct, two, verdict } from './format.js';
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
import { eachRound, perRound, withRounds, type Rounds } from './rounds.js';

export interface LatencyReportInput {
  readonly settings: LatencySettings;
  /** Each target's runs, one a round (bench/rounds.ts). */
  readonly measurements: readonly Rounds<LatencyMeasurement>[];
  readonly simulatorDelayMs: number;
}

/** Other processes busier than this during a run make its figures unrepresentative. */
const noisyOtherCores = 0.25;

const msCell = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

function failures(m: LatencyMeasurement): string {
  const count = m.non2xx + m.errors;
  if (count === 0) return '0';
  const parts = Object.entries(m.statusCounts)
    .filter(([status]) => !status.startsWith('2'))
    .map(([status, n]) => `${int(n)}× ${status}`);
  if (m.errors > 0) parts.push(`${int(m.errors)} errors/timeouts`);
  return `**${int(count)}** (${parts.join(', ')})`;
}

/** The median round's failed requests, then any other round's: a round that failed must not hide behind the median. */
function roundFailures(r: Rounds<LatencyMeasurement>): string {
  const others = r.runs
    .map((m, i) => ({ m, round: i + 1 }))
    .filter(({ m }) => m !== r.median && m.non2xx + m.errors > 0)
    .map(({ m, round }) => `round ${round}: ${failures(m)}`);
  return [failures(r.median), ...others].join('; ');
}

function commitRow(c: CommitCost, manyRounds: boolean): string {
  return `| ${cell(c.label)} | ${msCell(c.p50Ms)} |${manyRounds ? ' |' : ''} | ${msCell(c.p99Ms)} | | | | |`;
}

/** Rows for the report's targets table, each judged on the median of the ratios taken within a round. */
export function latencyTargets(input: LatencyReportInput): string[] {
  const bare = input.measurements.find((r) => r.median.kind === 'ceiling');
  if (!bare) return [];
  const rows: string[] = [];
  for (const app of input.measurements.filter((r) => r.median.kind === 'app')) {
    const rate = `at ${int(app.median.ratePerSecond)} req/s`;
    if (app.median.dialect === 'sqlite') {
      const p50 = perRound(app, bare, (a, b) => a.p50Ms / b.p50Ms);
      const p99 = perRound(app, bare, (a, b) => a.p99Ms / b.p99Ms);
      rows.push(
        `| SQLite p50 ≤ ${sqliteP50MaxRatio}× bare Fastify ${rate} | ${withRounds(p50, one, '×')} | ${verdict(p50.median <= sqliteP50MaxRatio, app)} |`,
      );
      rows.push(
        `| SQLite p99 ≤ ${sqliteP99MaxRatio}× bare Fastify ${rate} | ${withRounds(p99, one, '×')} | ${verdict(p99.median <= sqliteP99MaxRatio, app)} |`,
      );
    } else {
      const floors = app.runs.map(postgresFloorMs);
      if (floors.some((f) => f === null)) continue;
      const above = perRound(app, bare, (a, b) => a.p50Ms - b.p50Ms);
      const share = perRound(app, bare, (a, b) => (a.p50Ms - b.p50Ms) / postgresFloorMs(a)!.floorMs);
      rows.push(
        `| PostgreSQL p50 − bare Fastify's ≈ ${postgresDurableCommits} commits + ${postgresRoundTrips} round trips (at most ${postgresFloorSlack}× them) ${rate} | ` +
          `${above.rounds.map(msCell).join(' / ')} ms above bare, against ${floors.map((f) => msCell(f!.floorMs)).join(' / ')} ms: ` +
          `${withRounds(share, two, '×')} | ${verdict(share.median <= postgresFloorSlack, app)} |`,
      );
    }
  }
  return rows;
}

export function renderLatencySection(input: LatencyReportInput): string {
  const { settings } = input;
  const bare = input.measurements.find((r) => r.median.kind === 'ceiling');
  const manyRounds = (input.measurements[0]?.runs.length ?? 1) > 1;
  const toBare = (r: Rounds<LatencyMeasurement>, figure: (m: LatencyMeasurement) => number) =>
    r === bare
      ? '1×'
      : bare
        ? withRounds(
            perRound(r, bare, (a, b) => figure(a) / figure(b)),
            one,
            '×',
          )
        : '–';
  const rows: string[] = [];
  for (const r of input.measurements) {
    const m = r.median;
    rows.push(
      `| ${cell(m.label)} | ${msCell(m.p50Ms)} |${manyRounds ? ` ${eachRound(r, (x) => x.p50Ms, msCell)} |` : ''} ${msCell(m.p90Ms)} | ${msCell(m.p99Ms)} | ${msCell(m.maxMs)} | ` +
        `${toBare(r, (x) => x.p50Ms)} | ${toBare(r, (x) => x.p99Ms)} | ${roundFailures(r)} |`,
    );
    rows.push(...m.commitCosts.map((c) => commitRow(c, manyRounds)));
  }
  const details = input.measurements.map((r) => {
    const m = r.median;
    return (
      `| ${cell(m.label)} | ${m.serverCpuMsPerRequest.toFixed(3)} | ${pct(m.serverEventLoopBusy)} | ${one(m.loopDelayP99Ms)} / ${one(m.loopDelayMaxMs)} | ` +
      `${two(m.sendLagP50Ms)} / ${two(m.sendLagP99Ms)} | ${int(m.peakOutstanding)} | ${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} (${m.loadAverageAtStart}) |`
    );
  });
  const noisiest = Math.max(0, ...input.measurements.flatMap((r) => r.runs.map((m) => m.otherCpuCores ?? 0)));
  const contention =
    noisiest > noisyOtherCores
      ? `\n> **The machine was shared during these runs**: other processes used up to ${two(noisiest)} cores (last column${manyRounds ? ' for the median rounds; the most of any round is quoted here' : ''}), so every figure here, bare ` +
        `Fastify's included, is higher and noisier than on an idle machine; compare the targets with bare Fastify of the same ${manyRounds ? 'round' : 'run'}.\n`
      : '';
  const names = [...new Set(input.measurements.filter((r) => r.median.dialect).map((r) => dialectName(r.median.dialect!)))].join(' and ');
  const rounds = input.measurements[0]?.runs.length ?? 1;
  return `## Latency at ${int(settings.ratePerSecond)} requests/s (open loop)

### Method

- What an integrator feels at a realistic rate, rather than at saturation: requests leave on a fixed schedule,
  one every ${two(1000 / settings.ratePerSecond)} ms, whatever earlier answers are doing (bench/open-loop.ts: node:http, a keep-alive
  agent of up to ${int(settings.maxConnections)} connections, so a slow answer never holds back the next request), and each latency
  is counted from the moment its request was due, so a stall counts for every request it delays (no
  coordinated omission; autocannon's closed loop, and its overallRate, which sends in bursts, would hide it).
  ${settings.warmupS} s of warm-up (every API key makes its once-a-minute \`last_used_at\` write), then ${settings.durationS} s measured${manyRounds ? ' (per target and round)' : ''}.
- ${
    manyRounds
      ? `In ${rounds} rounds, each running every target below once, in the order of the table, so that the targets compared
  ran minutes apart under the same load from the rest of the machine. A target's row is its median round by p50 (of an
  even count, the lower of the middle two), so its columns are one real run's; every round's p50 is beside it. The
  ratios to bare Fastify are taken within each round and their median given, each round's in brackets, so they need
  not equal the ratio of the two rows' figures; the one commit beside a row is from that row's round.`
      : 'In one round (BENCH_ROUNDS=1): each target ran once, one after the other.'
  }
- Each target on a fresh database and in a process of its own, as in the throughput runs: bare Fastify (the
  ceiling's route), the floor (the statements a created call needs, by hand on the raw driver), and POST /v1/calls
  with the worker running (the call monitor ends each simulated call ${int(input.simulatorDelayMs)} ms after it starts, during the
  window), each request with the next of the 1,000 keys and a fresh Idempotency-Key.
- **One commit** on ${names || 'each database'}, measured on the service's database (SQLite: a file beside it) just before
  its run, ${int(commitSamples)} times at the same rate: one INSERT in a transaction of its own (bench/commit-cost.ts); on
  SQLite also with \`synchronous = FULL\`, on PostgreSQL also a round trip that commits nothing.
- Send lag is how late the generator got a request out; it is inside every latency.

| target | p50 ms |${manyRounds ? ' p50 per round |' : ''} p90 ms | p99 ms | max ms | p50 to bare | p99 to bare | non-2xx |
|---|---|${manyRounds ? '---|' : ''}---|---|---|---|---|---|
${rows.join('\n')}

| target | server CPU, ms / request | event loop busy | event-loop delay p99 / max ms | send lag p50 / p99 ms | most requests outstanding | other processes, cores (load avg) |
|---|---|---|---|---|---|---|
${details.join('\n')}
${contention}
${latencyAnalysis(input)}`;
}
