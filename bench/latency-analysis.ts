/**
 * The "where a request's time goes" part of the latency section: what each target's latency is made of, read
 * from the open-loop runs and the commits timed beside them, and why each remaining wait is there.
 */
import type { CommitCost } from './commit-cost.js';
import { int, one, pct, two } from './format.js';
import type { LatencyMeasurement } from './latency.js';
import type { LatencyReportInput } from './latency-report.js';

/** The issue's targets: SQLite within these multiples of bare Fastify at the same rate. */
export const sqliteP50MaxRatio = 1.5;
export const sqliteP99MaxRatio = 2;
/** PostgreSQL's p50 above bare Fastify may be this much more than the commits and reads a created call needs. */
export const postgresFloorSlack = 1.5;

/** Commits a created call cannot do without on PostgreSQL: the key's claim, then the call with the key's completion. */
export const postgresDurableCommits = 2;
/** Round trips on its path that commit nothing it must wait for: the API key's read, the rate limiter's count. */
export const postgresRoundTrips = 2;

/** The PostgreSQL floor above bare Fastify: its durable commits and its reads, as measured beside the run. */
export function postgresFloorMs(m: LatencyMeasurement): { commitMs: number; roundTripMs: number; floorMs: number } | null {
  const commit = m.commitCosts.find((c) => c.label.includes('commit, PostgreSQL'));
  const roundTrip = m.commitCosts.find((c) => c.label.includes('round trip, PostgreSQL'));
  if (!commit || !roundTrip) return null;
  return {
    commitMs: commit.p50Ms,
    roundTripMs: roundTrip.p50Ms,
    floorMs: postgresDurableCommits * commit.p50Ms + postgresRoundTrips * roundTrip.p50Ms,
  };
}

const msText = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));

function commit(m: LatencyMeasurement | undefined, pattern: RegExp): CommitCost | undefined {
  return m?.commitCosts.find((c) => pattern.test(c.label));
}

/** More requests outstanding at once than a quarter of a second's worth: the target fell behind the schedule. */
function fellBehind(m: LatencyMeasurement): boolean {
  return m.peakOutstanding > m.ratePerSecond / 4;
}

function behindNote(m: LatencyMeasurement): string {
  return fellBehind(m)
    ? ` **It fell behind the schedule** (up to ${int(m.peakOutstanding)} requests outstanding at once), so its figures measure a backlog as much as a request; the other processes on the machine used ${m.otherCpuCores === null ? 'an unknown share' : `${two(m.otherCpuCores)} cores`} meanwhile.`
    : '';
}

function sqliteParagraphs(bare: LatencyMeasurement, app: LatencyMeasurement, floor: LatencyMeasurement | undefined): string[] {
  const normal = commit(app, /SQLite.*NORMAL/);
  const full = commit(app, /SQLite.*FULL/);
  const out: string[] = [];
  const floorText = floor
    ? ` The floor (the same statements by hand on the raw driver behind a bare route, none of the service's code) answered at p50 ${msText(floor.p50Ms)} ms, ${one(floor.p50Ms / bare.p50Ms)}× bare` +
      (floor.p50Ms > sqliteP50MaxRatio * bare.p50Ms
        ? `: ${sqliteP50MaxRatio}× bare Fastify is below what this stack's statements cost before any code of the service runs, and the service adds ${msText(Math.max(0, app.p50Ms - floor.p50Ms))} ms above the floor (Kysely, the hooks, the key's fingerprint, logging).`
        : `; the service adds ${msText(Math.max(0, app.p50Ms - floor.p50Ms))} ms above it (Kysely, the hooks, the key's fingerprint, logging).`)
    : '';
  out.push(
    `- **SQLite: a request does not wait, it works.** POST /v1/calls answered at p50 ${msText(app.p50Ms)} ms, ${one(app.p50Ms / bare.p50Ms)}× bare Fastify's ${msText(bare.p50Ms)} ms.${behindNote(app)} ` +
      `Nothing on its path waits for the disk or a timer: in WAL mode with \`synchronous = NORMAL\` a commit writes to the WAL in the kernel's page cache and returns ` +
      `(${normal ? `${msText(normal.p50Ms)} ms at p50 beside this run` : 'not measured'}; a created call makes two: its key's claim, then the call with the completion of its key); ` +
      `the checkpoints, which do fsync, run on a thread of their own (src/db/sqlite-checkpointer.ts); the rate limiter counts in memory; the request log is buffered and written ` +
      `after the answer, 50 ms of rows in one statement; the access-log line is written after the answer. What is left is the request's own work on the one event loop ` +
      `(better-sqlite3 runs statements synchronously): authentication (a SHA-256 and a read), parsing and validating the body, the key's fingerprint and claim, the agent's read, ` +
      `the call's insert with its key's completion in one transaction, the answer. The server process used ${two(app.serverCpuMsPerRequest)} ms of CPU per request at this rate, ` +
      `bare Fastify ${two(bare.serverCpuMsPerRequest)} ms (every thread, the worker's and the garbage collector's included).${floorText}`,
  );
  out.push(
    `- **SQLite's tail** (p99 ${msText(app.p99Ms)} ms, ${one(app.p99Ms / bare.p99Ms)}× bare's ${msText(bare.p99Ms)} ms): a request that arrives while the event loop is busy waits until it is free. ` +
      `Besides other requests (the loop was busy ${pct(app.serverEventLoopBusy)} of the window), it runs the call monitor's passes (at this rate one every 50 ms, each claiming ` +
      `the calls that are due, asking the simulator and recording about ten ends with their events in one transaction: a few ms of statements ` +
      `that hold the loop), garbage collections, and the request log's batch. Ready callbacks waited up to ${one(app.loopDelayMaxMs)} ms for the loop ` +
      `(p99 ${one(app.loopDelayP99Ms)} ms; bare Fastify ${one(bare.loopDelayP99Ms)} / ${one(bare.loopDelayMaxMs)} ms).`,
  );
  out.push(
    `- **Why \`synchronous = NORMAL\` keeps the crash guarantees.** \`kill -9\` ends the process, not the kernel: a commit that returned has been handed to the kernel with write(2), ` +
      `and the kernel writes its page cache out whether or not the process lives; the next open replays the WAL. So an acknowledged call and its outcome event survive a kill -9 ` +
      `(the tests that kill the server so, in test/idempotency, test/webhooks and test/db, pass on it). What NORMAL gives up is a power loss or a kernel crash, which can lose the last ` +
      `commits before it (the database stays consistent). \`FULL\` would cover that with an fsync per commit: ` +
      `${full ? `${msText(full.p50Ms)} ms at p50 here (p99 ${msText(full.p99Ms)} ms), twice per created call, ${one((2 * full.p50Ms) / bare.p50Ms)}× bare Fastify's whole answer` : 'not measured'}; ` +
      `it stays NORMAL. A deployment that must survive a power cut keeps its data on PostgreSQL.`,
  );
  return out;
}

function postgresParagraph(bare: LatencyMeasurement, app: LatencyMeasurement, floor: LatencyMeasurement | undefined): string {
  const costs = postgresFloorMs(app);
  const above = app.p50Ms - bare.p50Ms;
  const floorText = floor ? ` The floor (the same statements by hand) answered at p50 ${msText(floor.p50Ms)} ms.` : '';
  return (
    `- **PostgreSQL: the two commits a created call cannot do without.** POST /v1/calls answered at p50 ${msText(app.p50Ms)} ms, ${msText(above)} ms above bare Fastify (p99 ${msText(app.p99Ms)} ms).${behindNote(app)} ` +
    `On its path are four round trips to PostgreSQL, one after the other: the key's read, the rate limiter's count, the key's claim (the agent is read beside it, on another ` +
    `connection), and the call with the completion of its key (one statement). Two of them commit and wait for the WAL's fsync, and must: the claim has to be on disk before the provider is asked to place the call (if a crash of the ` +
    `database lost it, a retry with the same key would place a second call), and the call with its key's completion before the 201 says it exists. The limiter's count was a third ` +
    `commit waiting for the disk; it now goes through a pool of its own whose sessions run with \`synchronous_commit = off\` (src/db/database.ts): the count is visible at once and ` +
    `its commit returns once its WAL is in PostgreSQL's buffers. A crash of the database server can lose the counts of its last few hundred ms, so a client may get that many more ` +
    `requests through once; never a claim, call or event, which commit through the main pool.` +
    (costs
      ? ` Measured beside the run, a commit costs ${msText(costs.commitMs)} ms and a round trip without one ${msText(costs.roundTripMs)} ms: ${postgresDurableCommits} commits and ` +
        `${postgresRoundTrips} round trips make ${msText(costs.floorMs)} ms of the ${msText(above)} ms; the rest is the request's work in the server (as on SQLite) and in ` +
        `PostgreSQL, and the commits of the worker and the request log, which share the WAL's flushes.`
      : '') +
    floorText +
    ` Once a minute per API key, authentication also writes the key's \`last_used_at\` (a commit on that one request's path; the warm-up makes them before the window).`
  );
}

export function latencyAnalysis(input: LatencyReportInput): string {
  const bare = input.measurements.find((m) => m.kind === 'ceiling');
  if (!bare) return '';
  const of = (kind: 'app' | 'floor', dialect: 'sqlite' | 'postgres') =>
    input.measurements.find((m) => m.kind === kind && m.dialect === dialect);
  const out = [
    `- **Bare Fastify** (p50 ${msText(bare.p50Ms)} ms, p99 ${msText(bare.p99Ms)} ms) is the round trip itself: the generator's send, the loopback, both processes waking ` +
      `and Node's HTTP on both sides. Every other figure includes it.`,
  ];
  const sqlite = of('app', 'sqlite');
  if (sqlite) out.push(...sqliteParagraphs(bare, sqlite, of('floor', 'sqlite')));
  const postgres = of('app', 'postgres');
  if (postgres) out.push(postgresParagraph(bare, postgres, of('floor', 'postgres')));
  return `### Where a request's time goes\n\n${out.join('\n')}\n`;
}
