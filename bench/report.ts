/**
 * The one generated table: each figure (the median of its rounds where there are rounds) beside its budget
 * from issue 23, ✓ or ✗ where there is one. It replaces the marked section of BENCHMARKS.md; everything
 * else in that file is written by hand.
 */
import fs from 'node:fs';
import type { BatchResult } from './batch.js';
import type { CallsRound } from './calls.js';
import type { DispatcherResult } from './dispatcher.js';
import type { GrowthPoint } from './growth.js';
import { median, type Dialect } from './harness.js';

export interface Results {
  readonly date: string;
  readonly machine: { readonly cpu: string; readonly cores: number; readonly node: string; readonly note: string };
  readonly settings: Record<string, unknown>;
  readonly tookS: number;
  readonly failures: readonly string[];
  readonly calls: Partial<Record<Dialect, CallsRound[]>>;
  readonly batch: Partial<Record<Dialect, BatchResult>>;
  /** The batch again with 5 % of creates losing their answer (issue 24). */
  readonly lostBatch: Partial<Record<Dialect, BatchResult>>;
  /** 10,000 recipients at max_concurrency 1,000 (issue 36). */
  readonly largeBatch: Partial<Record<Dialect, BatchResult>>;
  readonly dispatcher: Partial<Record<Dialect, DispatcherResult[]>>;
  readonly growth: Partial<Record<Dialect, GrowthPoint[]>>;
}

interface Budget {
  readonly text: string;
  readonly met: (dialect: Dialect, value: number) => boolean;
}

const num = (value: number, digits = 1) =>
  Number.isFinite(value) ? value.toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–';
const mark = (budget: Budget | undefined, dialect: Dialect, value: number) =>
  budget === undefined ? '' : budget.met(dialect, value) ? ' ✓' : ' ✗';

/** One row: a cell per database from `cell`, which returns the text and the value judged against the budget. */
function row(label: string, budget: Budget | undefined, cell: (dialect: Dialect) => [string, number] | undefined): string {
  const cells = (['sqlite', 'postgres'] as const).map((dialect) => {
    const value = cell(dialect);
    return value === undefined ? 'not run' : `${value[0]}${mark(budget, dialect, value[1])}`;
  });
  return `| ${label} | ${cells.join(' | ')} | ${budget?.text ?? '–'} |`;
}

const byDialect = (sqlite: number, postgres: number, sense: 'max' | 'min'): ((dialect: Dialect, value: number) => boolean) => {
  return (dialect, value) => {
    const limit = dialect === 'sqlite' ? sqlite : postgres;
    return sense === 'max' ? value <= limit : value >= limit;
  };
};

/** The rows of the calls scenario: label, budget, the figure of a round, its unit and decimals. */
const callsRows: [string, Budget | undefined, (round: CallsRound) => number, string, number][] = [
  ['POST /v1/calls, p50 at 100 req/s', undefined, (r) => r.callgate.latency.p50Ms, 'ms', 2],
  [
    'POST /v1/calls, p99 at 100 req/s',
    { text: '≤ 10 ms SQLite, ≤ 20 ms PostgreSQL', met: byDialect(10, 20, 'max') },
    (r) => r.callgate.latency.p99Ms,
    'ms',
    2,
  ],
  [
    'POST /v1/calls, throughput at 50 connections',
    { text: '≥ 800 calls/s SQLite, ≥ 300 PostgreSQL', met: byDialect(800, 300, 'min') },
    (r) => r.callgate.throughput.requestsPerSecond,
    'calls/s',
    0,
  ],
  ['bare Fastify (scale, not a target), p50 at 100 req/s', undefined, (r) => r.bare.latency.p50Ms, 'ms', 2],
  ['bare Fastify (scale, not a target), p99 at 100 req/s', undefined, (r) => r.bare.latency.p99Ms, 'ms', 2],
  ['bare Fastify (scale, not a target), throughput', undefined, (r) => r.bare.throughput.requestsPerSecond, 'req/s', 0],
  ['Peak RSS of the server under POST /v1/calls', { text: '≤ 150 MB', met: (_d, v) => v <= 150 }, (r) => r.callgate.peakRssMb, 'MB', 0],
];

/** A batch scenario's rows: its time against its no-wait replay, the concurrency it reached, its freed-slot wait. */
function batchRows(label: string, pick: (dialect: Dialect) => BatchResult | undefined, least: number): string[] {
  return [
    row(`${label}, time to finish / its no-wait replay (ratio)`, { text: `ratio ≥ ${least}`, met: (_d, v) => v >= least }, (d) => {
      const b = pick(d);
      return b && [`${num(b.elapsedS)} s / ${num(b.noWaitS)} s (${num(b.ratio, 2)}); mean-slot ideal ${num(b.idealS)} s`, b.ratio];
    }),
    row(`${label}, highest concurrency at the provider`, { text: '≤ max_concurrency', met: (_d, v) => v <= 1 }, (d) => {
      const b = pick(d);
      return b && [`${b.highestConcurrency} of ${b.maxConcurrency}`, b.highestConcurrency / b.maxConcurrency];
    }),
    row(`${label}, freed slot to next dial, p50 / p99`, { text: 'p99 ≤ 100 ms', met: (_d, v) => v <= 100 }, (d) => {
      const b = pick(d);
      return b && [`${num(b.freedSlotWaitP50Ms, 0)} / ${num(b.freedSlotWaitP99Ms, 0)} ms`, b.freedSlotWaitP99Ms];
    }),
  ];
}

export function renderTable(results: Results): string {
  const calls = (dialect: Dialect, pick: (round: CallsRound) => number) => {
    const rounds = results.calls[dialect];
    return rounds && rounds.length > 0 ? median(rounds.map(pick)) : undefined;
  };
  const dispatcher = (dialect: Dialect, pick: (run: DispatcherResult) => number | undefined) => {
    const values = (results.dispatcher[dialect] ?? []).map(pick).filter((value): value is number => value !== undefined);
    return values.length > 0 ? median(values) : undefined;
  };
  const callsCell = (pick: (round: CallsRound) => number, unit: string, digits: number) => (dialect: Dialect) => {
    const value = calls(dialect, pick);
    return value === undefined ? undefined : ([`${num(value, digits)} ${unit}`, value] as [string, number]);
  };
  const batch = (dialect: Dialect) => results.batch[dialect];
  const growth = (dialect: Dialect, pick: (point: GrowthPoint) => number, digits = 1, inverse = false) => {
    const points = results.growth[dialect];
    if (!points || points.length < 2) return undefined;
    const [first, last] = [pick(points[0]!), pick(points[points.length - 1]!)];
    const ratio = inverse ? first / last : last / first;
    return [`${num(first, digits)} → ${num(last, digits)} (×${num(ratio, 2)})`, ratio] as [string, number];
  };
  const ratioBudget: Budget = { text: 'ratio 1 M / 10 k ≤ 1.3', met: (_d, v) => v <= 1.3 };
  const sizes = results.growth.sqlite?.map((p) => p.storedCalls) ?? results.growth.postgres?.map((p) => p.storedCalls) ?? [];
  const at = sizes.length > 0 ? sizes.map((s) => s.toLocaleString('en')).join(' → ') : '10,000 → 1,000,000';
  return [
    '| Figure | SQLite | PostgreSQL | Budget |',
    '|---|---|---|---|',
    ...callsRows.map(([label, budget, pick, unit, digits]) => row(label, budget, callsCell(pick, unit, digits))),
    ...batchRows('Batch', (d) => batch(d), 0.98),
    row("Batch with 5 % lost answers, time / the loss-free batch's (ratio)", { text: 'ratio ≥ 0.9', met: (_d, v) => v >= 0.9 }, (d) => {
      const [b, free] = [results.lostBatch?.[d], batch(d)];
      if (!b) return undefined;
      const ratio = free ? free.elapsedS / b.elapsedS : Number.NaN;
      return [
        `${num(b.elapsedS)} s / ${free ? num(free.elapsedS) : '–'} s (${num(ratio, 2)}); ${b.lostAnswers} lost, ${b.lostNotPlaced} of them not placed; ${num(b.ratio, 2)} of its replay`,
        ratio,
      ];
    }),
    row('Batch with 5 % lost answers, numbers dialed twice / recipients not final', { text: '0 / 0', met: (_d, v) => v === 0 }, (d) => {
      const b = results.lostBatch?.[d];
      if (!b) return b;
      const failed = b.failed > 0 ? ` (${b.failed} failed: lost on both their dials)` : '';
      return [`${b.dialedTwice} / ${b.notFinal}${failed}`, b.dialedTwice + b.notFinal];
    }),
    ...batchRows('Batch of 10,000 at 1,000', (d) => results.largeBatch?.[d], 0.95),
    row('Batch of 10,000 at 1,000, numbers dialed twice / peak RSS', { text: '0 / ≤ 250 MB', met: (_d, v) => v === 0 }, (d) => {
      const b = results.largeBatch?.[d];
      return b && [`${b.dialedTwice} / ${num(b.peakRssMb, 0)} MB`, b.dialedTwice + (b.peakRssMb <= 250 ? 0 : 1)];
    }),
    row(
      'Webhook dispatcher, deliveries/s (20 endpoints)',
      { text: '≥ 5,000 SQLite, ≥ 3,000 PostgreSQL', met: byDialect(5_000, 3_000, 'min') },
      (d) => {
        const value = dispatcher(d, (r) => r.perSecond);
        return value === undefined ? undefined : [`${num(value, 0)}/s`, value];
      },
    ),
    row('Dispatcher beside a dead endpoint: healthy deliveries/s (of all healthy)', { text: '≥ 90 %', met: (_d, v) => v >= 0.9 }, (d) => {
      const perSecond = dispatcher(d, (r) => r.withDeadEndpoint?.perSecond);
      const ratio = dispatcher(d, (r) => r.withDeadEndpoint?.ratio);
      return ratio === undefined || perSecond === undefined ? undefined : [`${num(perSecond, 0)}/s (${num(ratio * 100, 0)} %)`, ratio];
    }),
    row(
      'Dispatcher beside a dead endpoint: healthy outcome to receipt, p50 / p99',
      { text: 'p99 ≤ 1 s', met: (_d, v) => v <= 1_000 },
      (d) => {
        const p50 = dispatcher(d, (r) => r.withDeadEndpoint?.live.p50Ms);
        const p99 = dispatcher(d, (r) => r.withDeadEndpoint?.live.p99Ms);
        return p50 === undefined || p99 === undefined ? undefined : [`${num(p50, 0)} / ${num(p99, 0)} ms`, p99];
      },
    ),
    row(`Growth ${at}: create p99 (ms)`, ratioBudget, (d) => growth(d, (p) => p.create.p99Ms, 2)),
    row(`Growth ${at}: get p99 (ms)`, ratioBudget, (d) => growth(d, (p) => p.get.p99Ms, 2)),
    row(`Growth ${at}: list p99 (ms)`, ratioBudget, (d) => growth(d, (p) => p.list.p99Ms, 2)),
    row(`Growth ${at}: list by number p99 (ms)`, ratioBudget, (d) => growth(d, (p) => p.filtered?.p99Ms ?? Number.NaN, 2)),
    row(`Growth ${at}: create p50 (ms)`, ratioBudget, (d) => growth(d, (p) => p.create.p50Ms, 2)),
    row(`Growth ${at}: get p50 (ms)`, ratioBudget, (d) => growth(d, (p) => p.get.p50Ms, 2)),
    row(`Growth ${at}: list p50 (ms)`, ratioBudget, (d) => growth(d, (p) => p.list.p50Ms, 2)),
    row(`Growth ${at}: dispatcher deliveries/s (ratio of time per delivery)`, ratioBudget, (d) =>
      growth(d, (p) => p.dispatcherPerSecond, 0, true),
    ),
  ].join('\n');
}

const start = '<!-- bench:table:start (written by npm run bench; edit around it) -->';
const end = '<!-- bench:table:end -->';

/** Replaces the marked section of `file` with the table (appends the section when there is none). */
export function writeTable(file: string, table: string): void {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const section = `${start}\n${table}\n${end}`;
  const [before, rest] = [text.indexOf(start), text.indexOf(end)];
  const next =
    before >= 0 && rest > before ? text.slice(0, before) + section + text.slice(rest + end.length) : `${text.trimEnd()}\n\n${section}\n`;
  fs.writeFileSync(file, next);
}
