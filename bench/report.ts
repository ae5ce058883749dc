/** Renders BENCHMARKS.md from one run's measurements. Every figure in it comes from that run. */
import type { Dialect } from '../test/support/test-database.js';
import type { Machine } from './machine.js';
import { ms, type LoadSettings, type Measurement } from './measure.js';
import { limits, statementTable } from './analysis.js';
import {
  cell,
  dialectName,
  int,
  p99MaxMs,
  pct,
  pctFigure,
  postgresFloorShareBefore,
  postgresMinShare,
  sqliteFloorShareBefore,
  sqliteMinShare,
  two,
  verdict,
} from './format.js';
import type { ProfileSummary, Share } from './profile-summary.js';
import { renderBatchSection, type BatchReportInput } from './batch-report.js';
import { renderDispatcherSection, type DispatcherReportInput } from './dispatcher-report.js';
import { renderGrowthSection, type GrowthReportInput } from './growth-report.js';
import { latencyTargets, renderLatencySection, type LatencyReportInput } from './latency-report.js';
import { eachRound, overRounds, perRound, withRounds, type PerRound, type Rounds } from './rounds.js';

export interface ProfileRun {
  readonly dialect: Dialect;
  readonly file: string;
  readonly durationS: number;
  readonly measurement: Measurement;
  readonly summary: ProfileSummary;
}

export interface ReportInput {
  readonly date: Date;
  readonly machine: Machine;
  readonly load: LoadSettings;
  readonly keyCount: number;
  readonly logLevel: string;
  readonly simulatorDelayMs: number;
  /** How many rounds the throughput and latency targets ran (bench/rounds.ts). */
  readonly rounds: number;
  /** Each throughput target's runs, one a round. */
  readonly measurements: readonly Rounds<Measurement>[];
  readonly postgresSkip: string | null;
  readonly profiles: readonly ProfileRun[];
  /** The open-loop latency runs, when any were asked for. */
  readonly latency: LatencyReportInput | null;
  /** The webhook dispatcher runs, when any were asked for. */
  readonly dispatcher: DispatcherReportInput | null;
  /** The batch runs, when any were asked for. */
  readonly batches: BatchReportInput | null;
  /** The growth runs, when any were asked for. */
  readonly growth: GrowthReportInput | null;
  readonly totalS: number;
}

/** Other processes busier than this during a window make its throughput and latency unrepresentative. */
const noisyOtherCores = 0.25;

function failures(m: Measurement): number {
  return m.non2xx + m.errors;
}

function errorsOf(m: Measurement): string {
  if (failures(m) === 0) return '0';
  const parts = Object.entries(m.statusCounts)
    .filter(([status]) => !status.startsWith('2'))
    .map(([status, count]) => `${int(count)}× ${status}`);
  if (m.errors > 0) parts.push(`${int(m.errors)} errors/timeouts`);
  return `**${int(failures(m))}** (${parts.join(', ')})`;
}

/** The median round's failed requests, then any other round's: a round that failed must not hide behind the median. */
function roundErrors(r: Rounds<Measurement>): string {
  const others = r.runs
    .map((m, i) => ({ m, round: i + 1 }))
    .filter(({ m }) => m !== r.median && failures(m) > 0)
    .map(({ m, round }) => `round ${round}: ${errorsOf(m)}`);
  return [errorsOf(r.median), ...others].join('; ');
}

function shares(list: readonly Share[]): string {
  return list.map((s) => `| ${cell(s.name)} | ${pct(s.share)} |`).join('\n');
}

function profileSection(p: ProfileRun): string {
  const m = p.measurement;
  return `### CPU profile, ${dialectName(p.dialect)}

${p.durationS} s of the same load with the V8 sampling profiler (the one behind \`node --cpu-prof\`) running in the
server process, started after the warm-up through \`node:inspector\` (${int(m.requestsPerSecond)} req/s while profiling, non-2xx ${errorsOf(m)}).
The main thread was busy ${pct(1 - p.summary.idleShare)} of the profiled time. Self time as a share of busy time.
Node's own functions and native code are charged to the nearest caller from a package or from our code (a socket
write to Fastify's reply or to pg's query, a log write to pino, hashing to callgate); SQLite's native calls are split
into preparing (\`Statement\`: parsing and planning SQL text) and running (\`run\`/\`all\`/\`get\`). Samples are
wall-clock time on the thread, so time spent waiting for a CPU shows up in whatever the thread was doing.

| component | share |
|---|---|
${shares(p.summary.components)}

| function (self time) | share |
|---|---|
${shares(p.summary.functions)}
`;
}

function roundsMethod(input: ReportInput, manyRounds: boolean): string {
  if (!manyRounds) return '- **Rounds:** one (BENCH_ROUNDS=1): each target ran once, one after the other.';
  return `- **Rounds:** ${input.rounds} of them; each runs every target above once, in the order of the table (the ceiling, then each
  database's floor and service), each on a fresh database and in a fresh process, so that the targets compared ran
  minutes apart under the same load from the rest of the machine (on a shared machine one run can differ from the
  next by more than what is measured). A target's row is its median round by req/s (of an even count, the lower of
  the middle two), so its columns are one real run's; every round's req/s is beside it. A comparison of two targets
  (a share of the ceiling or of the floor, a cost beside the ceiling's or the floor's) is made within each round and
  its median given, each round's in brackets, so it need not equal the ratio of the two rows' figures.`;
}

export function renderReport(input: ReportInput): string {
  const { machine, load } = input;
  const of = (kind: Measurement['kind'], dialect: Dialect | null) =>
    input.measurements.find((r) => r.median.kind === kind && r.median.dialect === dialect);
  const ceilingRounds = of('ceiling', null);
  const ceiling = ceilingRounds?.median;
  const sqlite = of('app', 'sqlite');
  const postgres = of('app', 'postgres');
  const manyRounds = input.rounds > 1;
  /** Each round's throughput as a share of the same round's ceiling. */
  const ratio = (r: Rounds<Measurement>) =>
    ceilingRounds ? perRound(r, ceilingRounds, (m, c) => m.requestsPerSecond / Math.max(1, c.requestsPerSecond)) : null;
  const shareText = (p: PerRound) => withRounds(p, pctFigure, ' %');

  const rows = input.measurements.map((r) => {
    const m = r.median;
    const share = r === ceilingRounds ? '100 %' : ratio(r);
    return (
      `| ${m.label} | ${int(m.requestsPerSecond)} |${manyRounds ? ` ${eachRound(r, (x) => x.requestsPerSecond, int)} |` : ''} ` +
      `${ms(m.p50Ms)} | ${ms(m.p99Ms)} | ${int(m.peakRssMb)} | ${share === null ? '–' : typeof share === 'string' ? share : shareText(share)} | ${roundErrors(r)} |`
    );
  });
  if (input.postgresSkip)
    rows.push(`| POST /v1/calls, PostgreSQL | not run: ${cell(input.postgresSkip)} |${manyRounds ? ' |' : ''} | | | | |`);

  const targets: string[] = [];
  for (const [service, min] of [
    [sqlite, sqliteMinShare],
    [postgres, postgresMinShare],
  ] as const) {
    if (!service) continue;
    const r = ratio(service);
    targets.push(
      `| ${dialectName(service.median.dialect)} throughput ≥ ${pct(min)} of the ceiling | ${r === null ? 'no ceiling measured' : shareText(r)} | ` +
        `${r === null ? 'not known' : verdict(r.median >= min, service)} |`,
    );
  }
  if (!postgres) targets.push(`| PostgreSQL throughput ≥ ${pct(postgresMinShare)} of the ceiling | not measured | not known |`);
  for (const [service, before] of [
    [sqlite, sqliteFloorShareBefore],
    [postgres, postgresFloorShareBefore],
  ] as const) {
    const floor = service && of('floor', service.median.dialect);
    if (!service || !floor) continue;
    const share = perRound(service, floor, (m, f) => m.requestsPerSecond / Math.max(1, f.requestsPerSecond));
    targets.push(
      `| ${dialectName(service.median.dialect)}: POST /v1/calls's share of the floor's throughput up from ${pct(before)} | ${shareText(share)} | ` +
        `${verdict(share.median > before, service)} |`,
    );
  }
  for (const r of [sqlite, postgres]) {
    if (!r) continue;
    const p99 = overRounds(r, (m) => m.p99Ms);
    targets.push(
      `| p99 < ${p99MaxMs} ms, ${dialectName(r.median.dialect)} | ${withRounds(p99, ms, ' ms')} | ${verdict(p99.median < p99MaxMs, r)} |`,
    );
  }

  if (input.latency) targets.push(...latencyTargets(input.latency));

  const everyRun = input.measurements.flatMap((r) => r.runs.map((m, i) => ({ m, round: i + 1 })));
  const noisiest = Math.max(0, ...everyRun.map(({ m }) => m.otherCpuCores ?? 0));
  const contention =
    noisiest > noisyOtherCores
      ? `\n> **The machine was shared during this run.** Other processes used up to ${two(noisiest)} of the ${machine.cores} cores ` +
        `while targets were measured (column "other processes"${manyRounds ? ', median rounds; the most of any round is quoted here' : ''}; load averages at the start of each window beside it). ` +
        `Throughput and latency are therefore lower and noisier than on an idle machine, the ceiling included; ` +
        `CPU time per request is the figure least affected by it.\n`
      : '';

  const monitor = input.measurements
    .map((r) => r.median)
    .filter((m) => m.calls)
    .map(
      (m) =>
        `${dialectName(m.dialect)}: ${int(m.calls!.total)} calls stored, ${int(m.calls!.ended)} ended by the monitor, ` +
        `${int(m.calls!.overdue)} overdue when the server stopped`,
    )
    .join('; ');
  const logs = everyRun
    .filter(({ m }) => m.logProblems.count > 0)
    .map(
      ({ m, round }) =>
        `${m.label}${manyRounds ? `, round ${round}` : ''}: ${int(m.logProblems.count)} lines at warn or above, the first: \`${cell(m.logProblems.first ?? '')}\``,
    );
  const mixes = input.profiles.map((p) => p.measurement).filter((m) => m.statementMix.length > 0);

  return `# Benchmarks

Generated by \`npm run bench\` (bench/run.ts) on ${input.date.toISOString()}; the whole run took ${Math.round(input.totalS)} s.
Every figure below comes from that one run; run it again to refresh this file.

## Machine

| | |
|---|---|
| CPU | ${machine.cpuModel} |
| Cores | ${machine.cores} |
| RAM | ${machine.ramGb} GB |
| OS | ${machine.os} |
| Node.js | ${machine.node} |
| SQLite | ${machine.sqlite} |
| PostgreSQL | ${machine.postgres} (same machine, over 127.0.0.1) |

## Method

- Each server runs in a process of its own (bench/serve-target.ts, transpiled to JavaScript and forked with plain
  \`node\` and the flags of \`npm start\`, as production runs the server; under tsx the process would also hold tsx's
  loader thread, about 35 MB of RSS); autocannon 8 runs in the parent process, so the two share the machine's
  ${machine.cores} cores but never an event loop.
- **Ceiling:** a bare Fastify 5 app with one POST route (no logger, hooks or schemas) answering 201 with a JSON
  body of the same shape and size as a created call (${ceiling ? `${ceiling.responseBytes} bytes` : 'n/a'}); it gets the same request bytes.
- **Floor:** what a created call needs of this stack with none of callgate's own code on the path: a bare Fastify 5
  route with the request's body schema (the service's TypeBox schema) that runs, written by hand on the raw driver
  and prepared once (on PostgreSQL once per connection), the statements the service runs for a created call: the key by its hash with its account's
  concurrency limit and the per-key limiter's count (on PostgreSQL one statement on the limiters' pool, as the
  service counts it; on SQLite the read, then the service's own in-memory limiter), the idempotency claim with the agent
  and the suppression list read with it (on PostgreSQL in the claim's statement), then the call with the completion of its key (one transaction on SQLite, one statement on PostgreSQL). No Kysely, logger, hooks,
  request log, provider, call monitor or webhooks; seeded and loaded as the service is. What the service costs above
  it is its own; what the floor costs, no code of the service can remove.
- **POST /v1/calls:** the service as built in dist/ (\`createServices\` + \`buildApp\`, configured from the
  environment as \`src/server.ts\` is, worker started: call monitor and webhook dispatcher), log level
  \`${input.logLevel}\` (to a file), one account with one simulator agent and ${int(input.keyCount)} API keys made with
  \`createApiKey\`. Each request carries the next key (round robin), a fresh Idempotency-Key and a body with a small
  metadata object, so it goes through authentication (a database lookup), the per-key rate limiter (limit raised
  to 10⁹ a minute: nothing is refused, every request is counted; in memory with SQLite, in PostgreSQL's
  \`rate_limits\` table with PostgreSQL, counted by the statement that reads the key), schema validation, the idempotency record, the agent lookup, the simulator
  and the transaction that stores the call. Simulated calls end ${input.simulatorDelayMs} ms after they start, so the
  monitor ends calls during the measurement as it would in production. SQLite: a new file in a temporary folder;
  PostgreSQL: a new database, dropped afterwards.
- **Load:** ${load.connections} connections, no pipelining, one autocannon run${manyRounds ? ' per target and round' : ''}: ${load.warmupS} s of warm-up, then ${load.durationS} s
  measured over the same connections (a fresh set of ${load.connections} connections opened on a loaded server waits
  seconds for its first answers, a start-up effect kept out of the window). The warm-up also makes each key's
  once-a-minute \`last_used_at\` write. req/s counts the 2xx answers that arrived in the window; the latency
  percentiles are computed from each of those answers' response times as autocannon measured them. Peak RSS is the
  server process's VmHWM at the end of the window. Server CPU and event-loop use and delay are read from the server
  process at both ends of the window; PostgreSQL CPU from /proc for the backends of the target's database;
  "other processes" is the machine's busy time (/proc/stat) minus all of those.
${roundsMethod(input, manyRounds)}
- **Diagnostic runs** (after the measured ones, once, ${input.profiles[0]?.durationS ?? 0} s each, not in the results table): the same
  load on a fresh database with the V8 CPU profiler running and every SQL statement counted where better-sqlite3
  runs it and where pg sends it. Both cost a few per cent of the throughput, which is why the measured runs do
  neither.
${contention}
## Results

| target | req/s |${manyRounds ? ' req/s per round |' : ''} p50 ms | p99 ms | peak RSS MB | ratio to ceiling${manyRounds ? ', median of the rounds' : ''} | non-2xx |
|---|---|${manyRounds ? '---|' : ''}---|---|---|---|---|
${rows.join('\n')}

| target | server CPU, ms / request | server CPU, cores | event loop busy | event-loop delay p99 / max ms | autocannon, cores | PostgreSQL, cores | other processes, cores (load avg) | p99.9 ms |
|---|---|---|---|---|---|---|---|---|
${input.measurements
  .map((r) => r.median)
  .map(
    (m) =>
      `| ${m.label} | ${m.serverCpuMsPerRequest.toFixed(3)} | ${two(m.serverCpuCores)} | ${pct(m.serverEventLoopBusy)} | ` +
      `${int(m.loopDelayP99Ms)} / ${int(m.loopDelayMaxMs)} | ` +
      `${two(m.loadGeneratorCpuCores)} | ` +
      `${m.postgresCpuCores === null ? '–' : two(m.postgresCpuCores)} | ${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} (${m.loadAverageAtStart}) | ${ms(m.p999Ms)} |`,
  )
  .join('\n')}

Call monitor${manyRounds ? ', median rounds' : ''}: ${monitor || 'not measured'}.
${logs.length > 0 ? `\nLog lines at warn or above: ${logs.join('; ')}\n` : '\nNo log line at warn or above in any run.\n'}
## Targets (from the issue)

| target | measured | |
|---|---|---|
${targets.join('\n')}
${manyRounds ? "\nEach target is judged on the median over the rounds of the figure or ratio it names, each round's in brackets; a ratio is taken within a round.\n" : ''}
## What limits it

${limits(input, ceilingRounds)}

${mixes.map((m) => `### SQL statements per created call, ${dialectName(m.dialect)} (diagnostic run)\n\n${statementTable(m)}\n`).join('\n')}
${input.profiles.map(profileSection).join('\n')}${input.latency ? `\n${renderLatencySection(input.latency)}` : ''}${input.dispatcher ? renderDispatcherSection(input.dispatcher) : ''}${input.batches ? renderBatchSection(input.batches) : ''}${input.growth ? renderGrowthSection(input.growth) : ''}`;
}
