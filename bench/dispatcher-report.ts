/** The "Webhook dispatcher" section of BENCHMARKS.md, from the dispatcher measurements of the same run. */
import type { DispatcherMeasurement, DispatcherSettings } from './dispatcher-bench.js';
import { cell, dialectName, int, one, pct, two } from './format.js';
import { ms } from './measure.js';
import { logNote, perDialect, sectionEnd, sharedMachineNote, verdict as sectionVerdict, type SectionInput } from './section-report.js';

/** The targets for the dispatcher. */
export const sqliteMinDeliveriesPerSecond = 3_000;
export const firstAttemptP50MaxMs = 20;

export type DispatcherReportInput = SectionInput<DispatcherSettings, DispatcherMeasurement>;

/** Everything that makes a run's figures untrustworthy: lost or repeated deliveries, bad signatures. */
export function dispatcherProblems(m: DispatcherMeasurement): string[] {
  const problems: string[] = [];
  const succeeded = m.deliveries.succeeded ?? 0;
  if (m.delivered < m.events) problems.push(`${int(m.events - m.delivered)} of ${int(m.events)} backlog deliveries never arrived`);
  if (succeeded < m.events) problems.push(`${int(m.events - succeeded)} backlog deliveries not marked succeeded`);
  if (m.missing > 0) problems.push(`${int(m.missing)} of ${int(m.outcomes)} outcome events never arrived`);
  if (m.repeats > 0) problems.push(`${int(m.repeats)} requests repeated a webhook-id that had arrived before`);
  if (m.signatureFailures > 0)
    problems.push(`${int(m.signatureFailures)} signatures did not verify (${cell(m.firstSignatureFailure ?? '')})`);
  return problems;
}

function verdict(ok: boolean, m: DispatcherMeasurement): string {
  return sectionVerdict(ok, dispatcherProblems(m), 'the run lost, repeated or mis-signed deliveries');
}

function limits(input: DispatcherReportInput): string {
  return perDialect(input.measurements, (m) => {
    const text: string[] = [];
    text.push(
      `The dispatcher process used **${two(m.dispatcherCpuMsPerDelivery)} ms of CPU per delivery** (claim, sign, send, read the answer, ` +
        `record; all its threads, ${two(m.dispatcherCpuCores)} cores in all, V8's and libuv's helper threads included).`,
    );
    if (m.dispatcherLoopBusy > 0.9) {
      text.push(
        `Its event loop was busy ${pct(m.dispatcherLoopBusy)} of the window: it is bound by its one JavaScript thread, on a machine of ` +
          `${input.cores} cores where the receiver took another ${two(m.receiverCpuCores)}` +
          (m.postgresCpuCores !== null ? ` and the PostgreSQL backends ${two(m.postgresCpuCores)}.` : '.'),
      );
    } else {
      const holdMs = (m.concurrency / Math.max(1, m.deliveriesPerSecond)) * 1000;
      text.push(
        `Its event loop was busy only ${pct(m.dispatcherLoopBusy)} of the window` +
          (m.postgresCpuCores !== null ? `; the PostgreSQL backends used ${two(m.postgresCpuCores)} cores` : '') +
          `. The rest went waiting for the database. Each delivery holds one of the worker's ${m.concurrency} slots ` +
          `(CALLGATE_WEBHOOK_CONCURRENCY) from its claim until its result is committed: at this rate at most ${one(holdMs)} ms on average ` +
          `(Little's law; less if some slots stood empty). Claims go one after another (an UPDATE … RETURNING, then a read of ` +
          `the claimed rows with their event and endpoint), and so do the recorded batches (begin, row locks, one update, the ` +
          `attempts insert, commit): round trips whose number does not grow with the batch, but which a delivery waits through.`,
      );
    }
    text.push(
      `An outcome reached the receiver ${ms(m.firstAttemptP50Ms)} ms after its commit at the median (p99 ${ms(m.firstAttemptP99Ms)} ms, ` +
        `max ${ms(m.firstAttemptMaxMs)} ms): the commit wakes the dispatcher in the same process at once, which claims, signs and sends ` +
        `it over a connection kept alive` +
        (m.firstAttemptMaxMs < 1000 ? '; none waited for the 1 s sweep.' : '; some waited for the 1 s sweep.'),
    );
    return text;
  });
}

export function renderDispatcherSection(input: DispatcherReportInput): string {
  const { settings, measurements } = input;
  if (measurements.length === 0 && !input.postgresSkip) return '';
  const outcomes = Math.round(settings.outcomesPerSecond * settings.latencyS);
  const rows = measurements.map(
    (m) => `| ${m.label} | ${int(m.deliveriesPerSecond)} | ${ms(m.firstAttemptP50Ms)} | ${ms(m.firstAttemptP99Ms)} | ${int(m.peakRssMb)} |`,
  );
  if (input.postgresSkip) rows.push(`| webhook dispatcher, PostgreSQL | not run: ${cell(input.postgresSkip)} | | | |`);
  const details = measurements.map(
    (m) =>
      `| ${m.label} | ${one(m.backlogMs / 1000)} | ${int(m.firstArrivalMs)} | ${two(m.allRecordedMs / 1000)} | ${two(m.dispatcherCpuMsPerDelivery)} | ` +
      `${two(m.dispatcherCpuCores)} | ${pct(m.dispatcherLoopBusy)} | ${two(m.receiverCpuCores)} | ` +
      `${m.postgresCpuCores === null ? '–' : two(m.postgresCpuCores)} | ${m.otherCpuCores === null ? '–' : two(m.otherCpuCores)} | ` +
      `${ms(m.firstAttemptMaxMs)} | ${int(m.producerLagMaxMs)} |`,
  );
  const checks = measurements.map((m) => {
    const statuses = Object.entries(m.deliveries)
      .map(([status, n]) => `${int(n)} ${status}`)
      .join(', ');
    const problems = dispatcherProblems(m);
    return (
      `${dialectName(m.dialect)}: ${int(m.delivered)} of ${int(m.events)} backlog deliveries arrived; rows afterwards ${statuses}, ` +
      `${int(m.attempts)} attempts; ${int(m.outcomes - m.missing)} of ${int(m.outcomes)} outcome events arrived; ` +
      `${int(m.signaturesVerified)} signatures checked` +
      (problems.length > 0 ? `. **Problems: ${problems.join('; ')}.**` : ', all valid; no webhook-id arrived twice.')
    );
  });

  const targets: string[] = [];
  const sqlite = measurements.find((m) => m.dialect === 'sqlite');
  targets.push(
    sqlite
      ? `| ≥ ${int(sqliteMinDeliveriesPerSecond)} deliveries/s, SQLite | ${int(sqlite.deliveriesPerSecond)} | ${verdict(sqlite.deliveriesPerSecond >= sqliteMinDeliveriesPerSecond, sqlite)} |`
      : `| ≥ ${int(sqliteMinDeliveriesPerSecond)} deliveries/s, SQLite | not measured | not known |`,
  );
  for (const m of measurements) {
    targets.push(
      `| first attempt p50 < ${firstAttemptP50MaxMs} ms, ${dialectName(m.dialect)} | ${ms(m.firstAttemptP50Ms)} ms | ${verdict(m.firstAttemptP50Ms < firstAttemptP50MaxMs, m)} |`,
    );
  }

  return `
## Webhook dispatcher

### Method

- Three processes: the receiver (bench/receiver-process.ts), the dispatcher (bench/dispatcher-process.ts) and this
  one, which only gives orders over IPC. The dispatcher is the service as built in dist/: \`createServices\` from the
  environment (\`CALLGATE_ROLES=worker\`, \`CALLGATE_WEBHOOK_ALLOW_PRIVATE=true\` for the local receiver, the other
  webhook settings at their defaults: ${measurements[0]?.concurrency ?? '?'} attempts at once, undici's kept-alive connection pool), \`startWorker\` when told; one
  account with one endpoint made with \`createEndpoint\`, pointing at the receiver. Dispatcher, receiver and PostgreSQL
  share the machine's ${input.cores} cores.
- **Receiver:** node:http with keep-alive, answering 200 as soon as a request's body has been read. It notes the
  wall-clock time (\`performance.timeOrigin + performance.now()\`) at which each webhook-id first arrived, counts any
  id that arrives again, and verifies the signature of every ${settings.verifyEvery}th request with the \`standardwebhooks\` package.
- **Throughput:** ${int(settings.events)} events (\`call.completed\`, one delivery each) written with \`enqueueEvent\` in
  transactions of 500 before the worker starts; on PostgreSQL followed by \`ANALYZE\` of the webhook tables, as
  autovacuum would do on a live database (on a table never analysed, PostgreSQL plans the claim's subquery as a sort
  of every pending row; SQLite keeps no statistics unless asked, and the service never asks, so it runs without).
  Then the worker starts; deliveries/s is (distinct webhook-ids − 1) / (last arrival − first arrival). Afterwards the
  dispatcher waits until it is idle (\`dispatcher.idle()\`) and the rows are counted by status, as a cross-check.
  CPU and event-loop figures cover the worker's start to the last arrival.
- **Time to first attempt:** ${int(outcomes)} calls stored as \`initiated\` with their next check an hour away (the call
  monitor leaves them alone); after the throughput phase and 1 s of idle worker, their outcomes are recorded with
  \`recordOutcome\` (the call's new state and its event in one transaction) at ${int(settings.outcomesPerSecond)} a second for ${settings.latencyS} s,
  each followed by the dispatcher wake-up the call monitor sends (\`notifier.notify()\`), each started on schedule
  whatever the previous one is doing. The producer notes the wall-clock time at which \`recordOutcome\` resolved
  (its transaction had committed); the figure is the event's first arrival at the receiver minus that time, both
  clocks being the same machine's. "Producer lag" is how late the producer started an outcome at worst.
- Peak RSS is the dispatcher process's VmHWM, started again after the backlog was written, so it covers the worker's
  two phases. SQLite: a new file in a temporary folder; PostgreSQL: a new database, dropped afterwards.
${sharedMachineNote(measurements, 'a throughput window')}
### Results

| target | deliveries/s | first attempt p50 ms | p99 ms | peak RSS MB |
|---|---|---|---|---|
${rows.join('\n')}

| target | backlog written, s | first arrival after start, ms | all recorded after start, s | dispatcher CPU, ms / delivery | dispatcher, cores | event loop busy | receiver, cores | PostgreSQL, cores | other processes, cores | first attempt max ms | producer lag max ms |
|---|---|---|---|---|---|---|---|---|---|---|---|
${details.join('\n')}

${sectionEnd({ checks, logNote: logNote(measurements, 'dispatcher runs'), targets, limits: limits(input) })}`;
}
