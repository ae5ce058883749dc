/** The "Batches" section of BENCHMARKS.md, from the batch measurements of the same run. */
import type { BatchMeasurement, BatchSettings } from './batch-bench.js';
import { cell, dialectName, int, one, pct, two } from './format.js';
import { ms } from './measure.js';
import {
  logNote,
  noisyOtherCores,
  perDialect,
  sectionEnd,
  sharedMachineNote,
  verdict as sectionVerdict,
  type SectionInput,
} from './section-report.js';

/** The issue's targets for batches. */
export const minIdealRatio = 0.8;
export const createMaxMs = { sqlite: 2_000, postgres: 4_000 } as const;

export type BatchReportInput = SectionInput<BatchSettings, BatchMeasurement>;

/** Everything that breaks a guarantee or leaves the run incomplete: over the limit, recipients not completed. */
export function batchProblems(m: BatchMeasurement): string[] {
  const problems: string[] = [];
  if (m.highestConcurrency > m.maxConcurrency)
    problems.push(`the simulator saw ${m.highestConcurrency} calls at once, over max_concurrency ${m.maxConcurrency}`);
  const completed = m.counts.completed ?? 0;
  if (completed < m.dialRecipients) {
    const others = Object.entries(m.counts)
      .filter(([status]) => status !== 'completed')
      .map(([status, n]) => `${int(n)} ${status}`)
      .join(', ');
    problems.push(`${int(m.dialRecipients - completed)} of ${int(m.dialRecipients)} recipients did not complete (${others})`);
  }
  if (m.placed !== m.dialRecipients) problems.push(`the simulator placed ${int(m.placed)} calls for ${int(m.dialRecipients)} recipients`);
  return problems;
}

function verdict(ok: boolean, m: BatchMeasurement): string {
  return sectionVerdict(ok, batchProblems(m), 'the run broke a guarantee or did not complete');
}

const slowest = (m: BatchMeasurement) => Math.max(...m.createMs);

function limits(input: BatchReportInput): string {
  return perDialect(input.measurements, (m) => {
    const text: string[] = [];
    // Each slot of the batch runs calls one after another: its mean cycle is the time per call in a slot.
    const cycleMs = (m.elapsedMs * m.maxConcurrency) / Math.max(1, m.placed);
    const overheadMs = Math.max(0, cycleMs - m.delayMs);
    const explained = m.monitorLag.meanMs + m.refillLag.meanMs;
    text.push(
      `A slot went round in ${int(cycleMs)} ms on average (the run's ${two(m.elapsedMs / 1000)} s × ${m.maxConcurrency} slots / ${int(m.placed)} calls): ` +
        `the ${m.delayMs} ms call and ${int(overheadMs)} ms between calls, which is what keeps the ratio at ${two(m.ratio)} ` +
        `(the simulator had ${one(m.meanConcurrency)} calls in progress on average, at most ${m.highestConcurrency}).`,
    );
    const parts = [
      {
        name: 'from the end of a call to its outcome being recorded (the call monitor)',
        meanMs: m.monitorLag.meanMs,
        p99Ms: m.monitorLag.p99Ms,
      },
      {
        name: 'from that record to the next call placed in the freed slot (the record transaction, the wake-up, the dialer’s pass)',
        meanMs: m.refillLag.meanMs,
        p99Ms: m.refillLag.p99Ms,
      },
    ].sort((a, b) => b.meanMs - a.meanMs);
    text.push(
      `Of the gap, ${parts.map((p) => `${int(p.meanMs)} ms (p99 ${int(p.p99Ms)} ms) went ${p.name}`).join(', and ')}` +
        (Math.abs(overheadMs - explained) > 10
          ? `; the remaining ${int(overheadMs - explained)} ms are slots that stood empty at the start and the end.`
          : '.'),
    );
    const busy = m.loopBusy;
    if (busy > 0.8) {
      text.push(`The process's event loop was busy ${pct(busy)} of the run: it is bound by its one JavaScript thread.`);
    } else {
      text.push(
        `Not the process's own CPU: it used ${two(m.processCpuCores)} cores (${two(m.processCpuMsPerCall)} ms per call, event loop busy ${pct(busy)})` +
          (m.postgresCpuCores === null ? '' : ` and PostgreSQL's backends ${two(m.postgresCpuCores)}`) +
          `. The gap is waiting: each ended call goes through statements one after another before its slot is dialed again ` +
          `(the monitor's claim; the record transaction: the call, its event and deliveries, its recipient, the batch's lock and ` +
          `the look for open recipients; then the dialer's look for due batches, the agent, and the claim transaction: lock, claim), ` +
          (m.dialect === 'postgres'
            ? 'each a round trip to the server, whose time grows with what else the machine runs.'
            : 'each a call into SQLite on the one connection, in turn with the other statements of the process.'),
      );
    }
    if ((m.otherCpuCores ?? 0) > noisyOtherCores) {
      text.push(
        `Other processes kept ${two(m.otherCpuCores ?? 0)} of the ${input.cores} cores busy during the run (load ${m.loadAverageAtStart} at its start): ` +
          `every one of those waits was longer than on an idle machine, so this ratio is a floor rather than a measure.`,
      );
    }
    const postLimit = createMaxMs[m.dialect];
    text.push(
      `POST /v1/batches of ${int(m.createRecipients)} recipients (${one(m.createBodyBytes / 1024 ** 2)} MB) answered in ${m.createMs.map((v) => int(v)).join(', ')} ms ` +
        `(${slowest(m) < postLimit ? 'under' : '**over**'} the ${int(postLimit / 1000)} s target): the schema, each recipient's rules, ` +
        `and the recipients inserted 1,000 rows to a statement in one transaction; the process's RSS rose from ${int(m.createBaseRssMb)} MB to a peak of ` +
        `${int(m.createPeakRssMb)} MB (the body, its parsed form and the rows are all in memory at once).`,
    );
    return text;
  });
}

export function renderBatchSection(input: BatchReportInput): string {
  const { settings, measurements } = input;
  if (measurements.length === 0 && !input.postgresSkip) return '';
  const rows = measurements.map(
    (m) =>
      `| ${m.label} | ${m.createMs.map((v) => int(v)).join(', ')} | ${int(m.createPeakRssMb)} | ${two(m.elapsedMs / 1000)} | ${two(m.ratio)} | ` +
      `${m.highestConcurrency} | ${one(m.meanConcurrency)} | ${two(m.processCpuCores)} | ${m.postgresCpuCores === null ? '–' : two(m.postgresCpuCores)} |`,
  );
  if (input.postgresSkip) rows.push(`| batches, PostgreSQL | not run: ${cell(input.postgresSkip)} | | | | | | | |`);
  const details = measurements.map(
    (m) =>
      `| ${m.label} | ${int(m.dialCreateMs)} | ${int(m.firstPlacedMs)} | ${ms(m.monitorLag.meanMs)} / ${ms(m.monitorLag.p99Ms)} / ${ms(m.monitorLag.maxMs)} | ` +
      `${ms(m.refillLag.meanMs)} / ${ms(m.refillLag.p99Ms)} / ${ms(m.refillLag.maxMs)} | ${two(m.processCpuMsPerCall)} | ${pct(m.loopBusy)} | ` +
      `${int(m.peakRssMb)} | ${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} (${m.loadAverageAtStart}) |`,
  );
  const checks = measurements.map((m) => {
    const statuses = Object.entries(m.counts)
      .map(([status, n]) => `${int(n)} ${status}`)
      .join(', ');
    const problems = batchProblems(m);
    return (
      `${dialectName(m.dialect)}: the batch ended \`${m.status}\` with ${statuses}; the simulator placed ${int(m.placed)} calls` +
      (problems.length > 0 ? `. **Problems: ${problems.join('; ')}.**` : ', never more than max_concurrency at once.')
    );
  });

  const targets: string[] = [];
  for (const m of measurements) {
    targets.push(
      `| ${int(m.dialRecipients)} recipients at ${m.maxConcurrency}: ≥ ${two(minIdealRatio)} of the ideal, ${dialectName(m.dialect)} | ${two(m.ratio)} | ${verdict(m.ratio >= minIdealRatio, m)} |`,
      `| highest concurrency ≤ ${m.maxConcurrency}, ${dialectName(m.dialect)} | ${m.highestConcurrency} | ${verdict(m.highestConcurrency <= m.maxConcurrency, m)} |`,
      `| POST /v1/batches of ${int(m.createRecipients)} < ${int(createMaxMs[m.dialect] / 1000)} s, ${dialectName(m.dialect)} | ${int(slowest(m))} ms (slowest of ${m.createMs.length}) | ${slowest(m) < createMaxMs[m.dialect] ? 'met' : '**not met**'} |`,
    );
  }

  return `
## Batches

### Method

- Two processes: the service (bench/batch-process.ts) and this one, which makes HTTP requests and gives orders over IPC.
  The service is the one built in dist/: \`createServices\` from the environment (\`CALLGATE_ROLES=api,worker\`,
  \`CALLGATE_SIMULATOR_DELAY_MS=${settings.delayMs}\`) and \`buildApp\`, its worker (call monitor, webhook dispatcher,
  batch dialer) running, as \`src/server.ts\` runs it. The one change: the simulator is made by the script
  (\`createSimulatorProvider\`, the same delay) and handed in through the provider registry, so that its counters can be
  read. One account, one simulator agent, one test-mode key; no webhook endpoint. SQLite: a new file in a temporary
  folder; PostgreSQL: a new database, dropped afterwards.
- **POST /v1/batches:** ${int(settings.createRecipients)} recipients (each with a \`reference\` and a three-field \`metadata\`),
  scheduled a day ahead so that nothing is dialed, each with a fresh Idempotency-Key, ${settings.createRuns} times one after another
  (the first on a process that has not run the route before; each batch cancelled after its answer). The time is from
  the request's start to the whole answer, here. Peak RSS is the service process's VmHWM, started again (after a
  garbage collection) just before the first POST.
- **Dialing:** then a batch of ${int(settings.dialRecipients)} recipients, \`max_concurrency\` ${settings.maxConcurrency}, starting at
  once; every simulated call lasts ${settings.delayMs} ms. The time is from the batch's \`created_at\` to its \`completed_at\`, as
  the service stamped them (its clock); the ideal is ${int(settings.dialRecipients)} / ${settings.maxConcurrency} × ${settings.delayMs} ms. The
  highest concurrency is the simulator's own count (calls placed and not yet at their end). Where the time went comes
  from the calls' rows (ms precision): "monitor lag" is a call's outcome record time (\`updated_at\`, stamped as its
  transaction starts) minus its end at the simulator (\`ended_at\`); "refill lag" is, for the k-th call placed, its
  \`created_at\` minus the (k − ${settings.maxConcurrency})-th outcome record time: the slot it took was freed by that
  outcome. CPU covers the POST to the batch's end: the service process (all threads) and PostgreSQL's backends of its
  database; "other processes" is the machine's busy time (/proc/stat) minus those and this process.
${sharedMachineNote(measurements, 'a batch run')}
### Results

| target | POST /v1/batches of ${int(settings.createRecipients)}, ms | peak RSS MB | ${int(settings.dialRecipients)} at ${settings.maxConcurrency}, s | ratio to ideal | highest concurrency | mean concurrency | process, cores | PostgreSQL, cores |
|---|---|---|---|---|---|---|---|---|
${rows.join('\n')}

| target | POST of the dialed batch, ms | first call after creation, ms | monitor lag mean / p99 / max ms | refill lag mean / p99 / max ms | process CPU, ms / call | event loop busy | peak RSS at the end, MB | other processes, cores (load avg) |
|---|---|---|---|---|---|---|---|---|
${details.join('\n')}

${sectionEnd({ checks, logNote: logNote(measurements, 'batch runs'), targets, limits: limits(input) })}`;
}
