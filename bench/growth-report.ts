/** The "Growth" section of BENCHMARKS.md, from the growth measurements of the same run. */
import type { GrowthMeasurement, GrowthSettings, GrowthStep, Latency, RequestKind } from './growth-bench.js';
import type { StatementPlan } from './growth-process.js';
import { requestKinds } from './growth-bench.js';
import { cell, dialectName, int, one, two } from './format.js';
import { growthAccounts, keysPerAccount, liveKeysPerAccount, testKeysPerAccount } from './growth-rows.js';
import { ms } from './measure.js';
import { logNote, perDialect, sectionEnd, sharedMachineNote, verdict as sectionVerdict, type SectionInput } from './section-report.js';

/** The issue's target: each figure at the largest size at most this many times its value at the smallest. */
export const maxGrowthRatio = 1.2;

export type GrowthReportInput = SectionInput<GrowthSettings, GrowthMeasurement>;

const kindNames: Readonly<Record<RequestKind, string>> = {
  create: 'POST /v1/calls',
  get: 'GET /v1/calls/{id}',
  firstPage: 'GET /v1/calls, first page',
  deepPage: 'GET /v1/calls, 50th page',
};

const size = (n: number) =>
  n >= 1_000_000 && n % 1_000_000 === 0 ? `${n / 1_000_000} M` : n >= 1_000 && n % 1_000 === 0 ? `${n / 1_000} k` : int(n);

/** Everything that leaves a figure unmeasured: failed requests, deliveries that never arrived. */
export function growthProblems(m: GrowthMeasurement, settings: GrowthSettings): string[] {
  const problems: string[] = [];
  for (const step of m.steps) {
    for (const kind of requestKinds) {
      if (step.latency[kind].failures > 0)
        problems.push(`${int(step.latency[kind].failures)} ${kindNames[kind]} failed at ${size(step.size)}`);
    }
    if (step.delivered < settings.backlog)
      problems.push(`${int(step.delivered)} of ${int(settings.backlog)} deliveries arrived at ${size(step.size)}`);
  }
  return problems;
}

interface Figure {
  readonly name: string;
  readonly value: (step: GrowthStep) => number;
  readonly format: (value: number) => string;
  /** Latencies grow worse upwards; the dispatcher's rate downwards (its ratio is time per delivery). */
  readonly ratio: (small: number, large: number) => number;
}

const figures: readonly Figure[] = [
  ...requestKinds.flatMap((kind) =>
    (['p50Ms', 'p99Ms'] as const).map(
      (p): Figure => ({
        name: `${kindNames[kind]}, ${p === 'p50Ms' ? 'p50' : 'p99'} ms`,
        value: (step) => (step.latency[kind] as Latency)[p],
        format: ms,
        ratio: (small, large) => large / small,
      }),
    ),
  ),
  {
    name: 'webhook dispatcher, deliveries/s (ratio: time per delivery)',
    value: (step) => step.deliveriesPerSecond,
    format: int,
    ratio: (small, large) => small / large,
  },
];

function ends(m: GrowthMeasurement): { small: GrowthStep; large: GrowthStep } | null {
  const small = m.steps[0];
  const large = m.steps[m.steps.length - 1];
  return small && large && large !== small ? { small, large } : null;
}

function ratioOf(m: GrowthMeasurement, figure: Figure): number | null {
  const e = ends(m);
  if (!e) return null;
  const a = figure.value(e.small);
  const b = figure.value(e.large);
  return a > 0 && b > 0 ? figure.ratio(a, b) : null;
}

function resultsTable(measurements: readonly GrowthMeasurement[]): string {
  const header = measurements.flatMap((m) => {
    const e = ends(m);
    return e
      ? [`${dialectName(m.dialect)}, ${size(e.small.size)}`, `${size(e.large.size)}`, `${size(e.large.size)} / ${size(e.small.size)}`]
      : [];
  });
  const rows = figures.map((figure) => {
    const cells = measurements.flatMap((m) => {
      const e = ends(m);
      if (!e) return [];
      const r = ratioOf(m, figure);
      return [figure.format(figure.value(e.small)), figure.format(figure.value(e.large)), r === null ? '–' : two(r)];
    });
    return `| ${figure.name} | ${cells.join(' | ')} |`;
  });
  return `| figure | ${header.join(' | ')} |\n|---|${header.map(() => '---').join('|')}|\n${rows.join('\n')}`;
}

function loadTable(measurements: readonly GrowthMeasurement[]): string {
  const rows = measurements.flatMap((m) =>
    m.steps.map((step) => {
      const loaded = step.loaded;
      return (
        `| ${dialectName(m.dialect)} | ${size(step.size)} | ${int(loaded.calls ?? 0)} / ${int(loaded.webhook_events ?? 0)} / ${int(loaded.webhook_deliveries ?? 0)} / ` +
        `${int(loaded.webhook_attempts ?? 0)} / ${int(loaded.request_logs ?? 0)} | ${one(step.loadMs / 1000)} | ${int(step.databaseBytes / 1024 ** 2)} | ` +
        `${int(step.peakRssMb)} |`
      );
    }),
  );
  return `| database | calls stored | rows written: calls / events / deliveries / attempts / request log | load s | database MB | peak RSS MB, requests and dispatcher |
|---|---|---|---|---|---|
${rows.join('\n')}`;
}

const shortSql = (text: string) => {
  const flat = text.replace(/\s+/g, ' ');
  // Long IN lists of parameters say nothing more after the first few.
  return flat.replace(/(\?|\$\d+)(, (\?|\$\d+)){3,}/g, '$1, …').slice(0, 220);
};

/** A plan line cut short: PostgreSQL prints an IN list's values whole. */
const shortLine = (line: string) => (line.length > 260 ? `${line.slice(0, 260)}…` : line);

function plansTable(m: GrowthMeasurement): string {
  const e = ends(m);
  const large = m.steps[m.steps.length - 1]!;
  const timeAt = (step: GrowthStep | undefined, p: StatementPlan) => {
    const found = step?.plans.find((q) => q.sql === p.sql);
    return found?.ms === null || found?.ms === undefined ? '–' : two(found.ms);
  };
  const rows = large.plans.map(
    (p) =>
      `| ${cell(p.path)} | \`${cell(shortSql(p.sql))}\` | ${p.plan.map((line) => `\`${cell(shortLine(line.trim()))}\``).join('<br>') || '(none: a plain insert)'} | ` +
      `${p.scans.length > 0 ? `**reads ${p.scans.join(', ')} whole**` : 'index'} | ${e ? `${timeAt(e.small, p)} | ` : ''}${timeAt(large, p)} |`,
  );
  const scanning = large.plans.filter((p) => p.scans.length > 0).length;
  return `<details><summary>${dialectName(m.dialect)}: ${large.plans.length} statements at ${size(large.size)} calls, ${scanning} reading a growing table whole</summary>

| path | statement | plan at ${size(large.size)} | | ${e ? `ms at ${size(e.small.size)} | ` : ''}ms at ${size(large.size)} |
|---|---|---|---|${e ? '---|' : ''}---|
${rows.join('\n')}

</details>`;
}

/** Empty tables (none of the bench's rows) are read whole by PostgreSQL's planner whatever their indexes. */
const unloaded = ['batches', 'batch_recipients', 'call_slots', 'rate_limits'];

function limits(input: GrowthReportInput): string {
  return perDialect(input.measurements, (m) => {
    const text: string[] = [];
    const e = ends(m);
    if (!e) return ['Only one size was measured.'];
    const worst = figures
      .map((figure) => ({ figure, r: ratioOf(m, figure) }))
      .filter((x): x is { figure: Figure; r: number } => x.r !== null)
      .sort((a, b) => b.r - a.r);
    const over = worst.filter((x) => x.r > maxGrowthRatio);
    text.push(
      over.length === 0
        ? `Every figure at ${size(e.large.size)} calls is within ${two(maxGrowthRatio)}× its value at ${size(e.small.size)}; the largest ratio is ${worst[0] ? `${two(worst[0].r)} (${worst[0].figure.name})` : 'not known'}.`
        : `Over ${two(maxGrowthRatio)}×: ${over.map((x) => `${x.figure.name} ${two(x.r)}`).join(', ')}.`,
    );
    const scans = e.large.plans.filter((p) => p.scans.some((t) => !unloaded.includes(t)));
    text.push(
      scans.length === 0
        ? `No statement of the hot paths reads a table the bench filled (calls, events, deliveries, attempts, request log) whole at ${size(e.large.size)} calls.`
        : `Statements reading a filled table whole at ${size(e.large.size)} calls: ${scans.map((p) => `${p.path} (${p.scans.join(', ')})`).join('; ')}.`,
    );
    const empty = e.large.plans.filter((p) => p.scans.length > 0 && p.scans.every((t) => unloaded.includes(t)));
    if (empty.length > 0)
      text.push(
        `${empty.length} statements read tables the bench leaves (nearly) empty (${[...new Set(empty.flatMap((p) => p.scans))].join(', ')}) whole, which a planner does for a table of a few pages; their indexes serve them once they fill.`,
      );
    return text;
  });
}

export function renderGrowthSection(input: GrowthReportInput): string {
  const { settings, measurements } = input;
  const problems = measurements.map((m) => ({ m, problems: growthProblems(m, settings) }));
  const targets = measurements.flatMap((m) =>
    figures.map((figure) => {
      const r = ratioOf(m, figure);
      const list = problems.find((p) => p.m === m)!.problems;
      return `| ${dialectName(m.dialect)}: ${figure.name}, ${size(settings.sizes[settings.sizes.length - 1]!)} / ${size(settings.sizes[0]!)} ≤ ${two(maxGrowthRatio)} | ${r === null ? 'not measured' : two(r)} | ${r === null ? 'not known' : sectionVerdict(r <= maxGrowthRatio, list, 'the run had failures')} |`;
    }),
  );
  if (input.postgresSkip) targets.push(`| PostgreSQL | not run: ${cell(input.postgresSkip)} | not known |`);
  const checks = problems.map(({ m, problems: list }) =>
    list.length === 0
      ? `${m.label}: every request answered 2xx and every delivery of each backlog arrived (${int(settings.backlog)} at each size).`
      : `${m.label}: **${list.join('; ')}**.`,
  );
  const total = measurements.reduce((sum, m) => sum + m.totalMs, 0) / 1000;
  return `
## Growth: ${settings.sizes.map(size).join(' and then ')} calls stored

How the service's answers and the dispatcher's rate change as its tables grow (bench/growth-bench.ts), on each
database in turn; ${int(total)} s for this section on this machine, most of it writing the rows.

- **Rows:** for each size a new database of its own, the service's own migrations, then the calls written by bulk
  statements in one transaction by a service process that then exits (\`INSERT … SELECT\` over \`generate_series\` on
  PostgreSQL, over a recursive CTE on SQLite), with as many events (one per ended call, its \`call.completed\` or
  \`call.failed\` envelope), deliveries, attempts and request-log rows, and the idempotency records of the last day's
  calls (kept 24 hours). Spread over the bench's ${growthAccounts} accounts and their
  ${growthAccounts * keysPerAccount} keys (${liveKeysPerAccount} live, ${testKeysPerAccount} test each); calls and events over the last 30 days, request-log rows over the
  last 7 (the retention jobs delete none during the run); 78 % completed, 22 % failed, the last 10 minutes' calls in
  progress; deliveries 96.5 % succeeded, 3 % failed, 0.5 % pending a retry hours ahead. PostgreSQL then runs \`VACUUM (ANALYZE)\`,
  as autovacuum does after such a change (so its vacuum of the fresh rows does not run during the rounds); SQLite gathers no statistics unless told, and the service never tells it, so
  it goes without here too.
- **Requests:** each database served by a service process of its own started after the load (\`createServices\` +
  \`buildApp\` from dist/, rate limit raised so nothing is refused, simulated calls lasting an hour so none ends during
  the run), all sizes at once; ${settings.rounds} rounds, each size in turn within a round and in the other order in the next, so that
  what else loads the machine falls on every size alike. In all, ${int(settings.requests)} requests of each kind per size (after
  ${int(settings.warmup)} not counted) from ${settings.concurrency} clients at once, timed here from the request's start to the whole answer:
  \`POST /v1/calls\` (round robin over the live keys, a fresh Idempotency-Key each), \`GET /v1/calls/{id}\` of a stored call
  picked at random (with a key of its account and mode), the first page of \`GET /v1/calls\` (20 calls, each account's live
  key in turn) and its ${settings.deepPage}th page, whose cursor was found once by following \`starting_after\` from the first page.
- **Dispatcher:** then, in as many rounds alternating as above, ${int(settings.backlog)} due deliveries in all per size (with their
  events) written in one transaction each round, the worker role started at the first (dispatcher, call monitor, retention
  and the other jobs, as in production) and woken at the next: deliveries/s counted at a local receiver
  (bench/receiver-process.ts) from a round's first arrival to its last; the figure is the median round.
- **Plans:** each hot path run once on each loaded database with every SQL statement captured where the drivers run it,
  and each distinct statement explained for the parameters it ran with (\`EXPLAIN QUERY PLAN\` on SQLite, \`EXPLAIN\` on
  PostgreSQL) and, for reads, timed (median of five runs): the API's calls create, get and list (first page, a cursor, a
  status, a test key), the events list (with \`type\` and \`created_after\`, and without), the dispatcher's and the call
  monitor's claims, the batch dialer's reads and claim, the request-log and event retention purges, the portal's overview
  and calls list (all, \`status=initiated\`, a cursor), the request-log list and its write. "Reads whole" is a SQLite
  \`SCAN\`, a PostgreSQL \`Seq Scan\`, or a PostgreSQL index scan without an \`Index Cond\`, of a table that grows.
- Other processes used ${measurements.map((m) => `${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} cores during ${dialectName(m.dialect)}'s requests (load average ${m.steps[0]?.loadAverageAtStart ?? '–'} at their start)`).join(', ')}.
${sharedMachineNote(measurements, 'the measured requests')}
### Results

${resultsTable(measurements)}

The latencies are this machine's, with the load generator beside the server; the ratios are what the section is for.

### Loading

${loadTable(measurements)}

### Query plans at ${size(settings.sizes[settings.sizes.length - 1]!)} calls

${measurements.map(plansTable).join('\n\n')}

${sectionEnd({ checks, logNote: logNote(measurements, 'growth runs'), targets, limits: limits(input) })}`;
}
