/**
 * `npm run bench`: what users feel, on SQLite and PostgreSQL (issue 23, point 6 and "Budget"). Writes every
 * figure to bench/results/latest.json and the one table of BENCHMARKS.md. Knobs (environment):
 *   BENCH_ONLY      calls,batch,lost,large,dispatcher,growth (the default: all); e.g. BENCH_ONLY=batch
 *                   (lost: the batch again with 5 % of creates losing their answer, half of them placed;
 *                   large: BENCH_LARGE_RECIPIENTS 10000 at BENCH_LARGE_CONCURRENCY 1000, the same fake)
 *   BENCH_DB        sqlite,postgres (the default: both); BENCH_POSTGRES_URL, the admin URL
 *   BENCH_ROUNDS    3: rounds of the calls and dispatcher scenarios, judged on their median
 *   BENCH_DURATION_S 10 and BENCH_WARMUP_S 2, per measure of the calls scenario; BENCH_RATE 100 requests/s
 *   BENCH_BATCH_RECIPIENTS 1000 at BENCH_BATCH_CONCURRENCY 100; BENCH_BACKLOG 10000 deliveries
 *   BENCH_GROWTH_SIZES 10000,1000000 calls stored; BENCH_GROWTH_S 5 per measure; BENCH_LOG_LEVEL info
 *   FAKE_ANSWER_MS 300-1500, FAKE_CALL_MS 5000-10000: the fake ElevenLabs
 * A run with BENCH_ONLY or BENCH_DB set is a partial one: it writes bench/results/partial.json and prints
 * the table, leaving latest.json and BENCHMARKS.md alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { batchRun } from './batch.js';
import { callsRound, type CallsSettings } from './calls.js';
import { dispatcherRun } from './dispatcher.js';
import { growthRun, type GrowthSettings } from './growth.js';
import { log, postgresUnavailable, root } from './harness.js';
import { renderTable, writeTable, type Results } from './report.js';

function setting(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  const value = raw ? Number(raw) : fallback;
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return value;
}

function list<T extends string>(name: string, all: readonly T[]): T[] {
  const chosen = (process.env[name]?.trim() || all.join(',')).split(',').map((item) => item.trim());
  const unknown = chosen.filter((item) => !all.includes(item as T));
  if (unknown.length > 0) throw new Error(`${name}: unknown ${unknown.join(', ')} (choose among ${all.join(', ')})`);
  return chosen as T[];
}

const scenarios = list('BENCH_ONLY', ['calls', 'batch', 'lost', 'large', 'dispatcher', 'growth'] as const);
const requested = list('BENCH_DB', ['sqlite', 'postgres'] as const);
const partial = Boolean(process.env.BENCH_ONLY?.trim() || process.env.BENCH_DB?.trim());
const rounds = Math.round(setting('BENCH_ROUNDS', 3));
const calls: CallsSettings = {
  connections: 50,
  rate: setting('BENCH_RATE', 100),
  durationS: setting('BENCH_DURATION_S', 10),
  warmupS: setting('BENCH_WARMUP_S', 2),
};
const batch = { recipients: setting('BENCH_BATCH_RECIPIENTS', 1_000), maxConcurrency: setting('BENCH_BATCH_CONCURRENCY', 100) };
const largeBatch = {
  recipients: setting('BENCH_LARGE_RECIPIENTS', 10_000),
  maxConcurrency: setting('BENCH_LARGE_CONCURRENCY', 1_000),
};
const backlog = setting('BENCH_BACKLOG', 10_000);
const growth: GrowthSettings = {
  sizes: (process.env.BENCH_GROWTH_SIZES ?? '10000,1000000').split(',').map(Number),
  rate: calls.rate,
  durationS: setting('BENCH_GROWTH_S', 5),
  warmupS: 1,
  backlog,
};

async function main(): Promise<void> {
  const started = Date.now();
  const postgresDown = requested.includes('postgres') ? await postgresUnavailable() : null;
  if (postgresDown) log(`PostgreSQL is not reachable (${postgresDown}); its figures are left out`);
  const dialects = requested.filter((d) => d === 'sqlite' || !postgresDown);
  const results: Results = {
    date: new Date().toISOString(),
    machine: {
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.cpus().length,
      node: process.version,
      note: process.env.BENCH_MACHINE_NOTE ?? '',
    },
    settings: { rounds, calls, batch, largeBatch, backlog, growth },
    tookS: 0,
    failures: [],
    calls: {},
    batch: {},
    lostBatch: {},
    largeBatch: {},
    dispatcher: {},
    growth: {},
  };
  const failures: string[] = [];
  // A scenario that fails is reported and the others still run: a 20-minute run is not thrown away for one.
  const attempt = async (what: string, run: () => Promise<void>) => {
    log(what);
    await run().catch((error: unknown) => {
      failures.push(`${what}: ${error instanceof Error ? error.message : String(error)}`);
      log(`FAILED ${failures[failures.length - 1]}`);
    });
  };
  // Each scenario on each database in turn; the calls and dispatcher scenarios `rounds` times (round by round).
  const plan: [(typeof scenarios)[number], number, (d: (typeof dialects)[number], round: number) => Promise<void>][] = [
    ['calls', rounds, async (d, round) => void (results.calls[d] ??= []).push(await callsRound(d, round, calls))],
    ['batch', 1, async (d) => void (results.batch[d] = await batchRun(d, batch))],
    ['lost', 1, async (d) => void (results.lostBatch[d] = await batchRun(d, { ...batch, loseAnswerRate: 0.05 }))],
    ['large', 1, async (d) => void (results.largeBatch[d] = await batchRun(d, largeBatch))],
    ['dispatcher', rounds, async (d, round) => void (results.dispatcher[d] ??= []).push(await dispatcherRun(d, backlog, round))],
    ['growth', 1, async (d) => void (results.growth[d] = await growthRun(d, growth))],
  ];
  for (const [scenario, times, run] of plan.filter(([scenario]) => scenarios.includes(scenario))) {
    for (let round = 1; round <= times; round++) {
      for (const d of dialects) await attempt(`${scenario}, ${d}, round ${round} of ${times}`, () => run(d, round));
    }
  }
  Object.assign(results, { tookS: Math.round((Date.now() - started) / 1000), failures });
  const table = renderTable(results);
  const file = path.join(root, 'bench/results', partial ? 'partial.json' : 'latest.json');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Hundredths are more than these measures can tell apart.
  fs.writeFileSync(
    file,
    `${JSON.stringify(results, (_key, value) => (typeof value === 'number' ? Math.round(value * 100) / 100 : value), 2)}\n`,
  );
  if (!partial) writeTable(path.join(root, 'BENCHMARKS.md'), table);
  process.stdout.write(`${table}\n\nbench: ${results.tookS} s; figures in ${path.relative(root, file)}\n`);
  if (failures.length > 0) {
    process.stderr.write(`bench: ${failures.length} scenario run(s) failed:\n${failures.join('\n')}\n`);
    process.exitCode = 1;
  }
}

await main();
