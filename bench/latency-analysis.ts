/**
 * The "where a request's time goes" part of the latency section: what each target's latency is made of, read
 * from the open-loop runs and the commits timed beside them, and why each remaining wait is there.
 */
import type { CommitCost } from './commit-cost.js';
import { int, one, pct, two } from './format.js';
import type { LatencyMeasurement } from './latency.js';
import type { LatencyReportInput } from './latency-report.js';
import { perRound, withRounds, type PerRound, type Rounds } from './rounds.js';

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

/**
 * A ratio to another target taken within each round: "2.5× bare Fastify's 0.58 ms" after one round; after more,
 * the median of the rounds' ratios, which need not be the ratio of the two median rounds' figures.
 */
function times(p: PerRound, base: string, figure: string, baseMs: number): string {
  if (p.rounds.length === 1) return `${one(p.median)}× ${base}'s ${msText(baseMs)} ms`;
  return `${one(p.median)}× ${base} of the same round (rounds ${p.rounds.map(one).join(' / ')}×; ${base}'s ${figure} ${msText(baseMs)} ms in its median round)`;
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

function sqliteParagraphs(
  bareRounds: Rounds<LatencyMeasurement>,
  appRounds: Rounds<LatencyMeasurement>,
  floorRounds: Rounds<LatencyMeasurement> | undefined,
): string[] {
  const [bare, app] = [bareRounds.median, appRounds.median];
  const normal = commit(app, /SQLite.*NORMAL/);
  const full = commit(app, /SQLite.*FULL/);
  const out: string[] = [];
  const p50 = perRound(appRounds, bareRounds, (a, b) => a.p50Ms / b.p50Ms);
  const p99 = perRound(appRounds, bareRounds, (a, b) => a.p99Ms / b.p99Ms);
  let floorText = '';
  if (floorRounds) {
    const floor = floorRounds.median;
    const floorP50 = perRound(floorRounds, bareRounds, (f, b) => f.p50Ms / b.p50Ms);
    const adds = withRounds(
      perRound(appRounds, floorRounds, (a, f) => Math.max(0, a.p50Ms - f.p50Ms)),
      msText,
      ' ms',
    );
    floorText =
      ` The floor (the same statements by hand on the raw driver behind a bare route, none of the service's code) answered at p50 ${msText(floor.p50Ms)} ms, ` +
      `${withRounds(floorP50, one, '×')} bare` +
      (floorP50.median > sqliteP50MaxRatio
        ? `: ${sqliteP50MaxRatio}× bare Fastify is below what this stack's statements cost before any code of the service runs, and the service adds ${adds} above the floor (Kysely, the hooks, the key's fingerprint, logging).`
        : `; the service adds ${adds} above it (Kysely, the hooks, the key's fingerprint, logging).`);
  }
  const fullTimes = appRounds.runs.every((m) => commit(m, /SQLite.*FULL/))
    ? perRound(appRounds, bareRounds, (a, b) => (2 * commit(a, /SQLite.*FULL/)!.p50Ms) / b.p50Ms)
    : null;
  out.push(
    `- **SQLite: a request does not wait, it works.** POST /v1/calls answered at p50 ${msText(app.p50Ms)} ms, ${times(p50, 'bare Fastify', 'p50', bare.p50Ms)}.${behindNote(app)} ` +
      `Nothing on its path waits for the disk or a timer: in WAL mode with \`synchronous = NORMAL\` a commit writes to the WAL in the kernel's page cache and returns ` +
      `(${normal ? `${msText(normal.p50Ms)} ms at p50 beside ${appRounds.runs.length > 1 ? 'its median round' : 'this run'}` : 'not measured'}; a created call makes two: its key's claim, then the call with the completion of its key); ` +
      `the checkpoints, which do fsync, run on a thread of their own (src/db/sqlite-checkpointer.ts); the rate limiter counts in memory; the request log is buffered and written ` +
      `after the answer, 50 ms of rows in one statement; the access-log line is written after the answer. What is left is the request's own work on the one event loop ` +
      `(better-sqlite3 runs statements synchronously): authentication (a SHA-256 and a read), parsing and validating the body, the key's fingerprint and claim, the agent's read, ` +
      `the call's insert with its key's completion in one transaction, the answer. The server process used ${two(app.serverCpuMsPerRequest)} ms of CPU per request at this rate, ` +
      `bare Fastify ${two(bare.serverCpuMsPerRequest)} ms (every thread, the worker's and the garbage collector's included).${floorText}`,
  );
  out.push(
    `- **SQLite's tail**: p99 ${msText(app.p99Ms)} ms, ${times(p99, 'bare Fastify', 'p99', bare.p99Ms)}. A request that arrives while the event loop is busy waits until it is free. ` +
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
      `${full && fullTimes ? `${msText(full.p50Ms)} ms at p50 here (p99 ${msText(full.p99Ms)} ms), twice per created call, ${one(fullTimes.median)}× bare Fastify's whole answer${fullTimes.rounds.length > 1 ? ` in the same round (rounds ${fullTimes.rounds.map(one).join(' / ')}×)` : ''}` : 'not measured'}; ` +
      `it stays NORMAL. A deployment that must survive a power cut keeps its data on PostgreSQL.`,
  );
  return out;
}

function postgresParagraph(
  bareRounds: Rounds<LatencyMeasurement>,
  appRounds: Rounds<LatencyMeasurement>,
  floorRounds: Rounds<LatencyMeasurement> | undefined,
): string {
  const [bare, app, floor] = [bareRounds.median, appRounds.median, floorRounds?.median];
  const manyRounds = appRounds.runs.length > 1;
  const costs = postgresFloorMs(app);
  const above = perRound(appRounds, bareRounds, (a, b) => a.p50Ms - b.p50Ms);
  // Each round's p50 above bare Fastify against the commits and round trips timed beside that round's run.
  const ofFloor = appRounds.runs.every((m) => postgresFloorMs(m))
    ? perRound(appRounds, bareRounds, (a, b) => (a.p50Ms - b.p50Ms) / postgresFloorMs(a)!.floorMs)
    : null;
  const floorText = floor ? ` The floor (the same statements by hand) answered at p50 ${msText(floor.p50Ms)} ms.` : '';
  return (
    `- **PostgreSQL: the two commits a created call cannot do without.** POST /v1/calls answered at p50 ${msText(app.p50Ms)} ms, ` +
    (manyRounds
      ? `${msText(above.median)} ms above bare Fastify of the same round (rounds ${above.rounds.map(msText).join(' / ')} ms; bare Fastify's p50 ` +
        `${msText(bare.p50Ms)} ms in its median round), p99 ${msText(app.p99Ms)} ms.`
      : `${msText(above.median)} ms above bare Fastify (p99 ${msText(app.p99Ms)} ms).`) +
    `${behindNote(app)} ` +
    `On its path are four round trips to PostgreSQL, one after the other: the key's read, the rate limiter's count, the key's claim (with the agent and the suppression list read in the same statement), ` +
    `and the call with the completion of its key (one statement). Two of them commit and wait for the WAL's fsync, and must: the claim has to be on disk before the provider is asked to place the call (if a crash of the ` +
    `database lost it, a retry with the same key would place a second call), and the call with its key's completion before the 201 says it exists. The limiter's count was a third ` +
    `commit waiting for the disk; it now goes through a pool of its own whose sessions run with \`synchronous_commit = off\` (src/db/database.ts): the count is visible at once and ` +
    `its commit returns once its WAL is in PostgreSQL's buffers. A crash of the database server can lose the counts of its last few hundred ms, so a client may get that many more ` +
    `requests through once; never a claim, call or event, which commit through the main pool.` +
    (costs
      ? ` Measured beside the run${manyRounds ? ' (its median round)' : ''}, a commit costs ${msText(costs.commitMs)} ms and a round trip without one ${msText(costs.roundTripMs)} ms: ` +
        `${postgresDurableCommits} commits and ${postgresRoundTrips} round trips make ${msText(costs.floorMs)} ms` +
        (manyRounds && ofFloor
          ? `; in each round, the p50 above bare Fastify was ${withRounds(ofFloor, two, '×')} what that round's commits and round trips make`
          : ` of the ${msText(above.median)} ms`) +
        `; the rest is the request's work in the server (as on SQLite) and in ` +
        `PostgreSQL, and the commits of the worker and the request log, which share the WAL's flushes.`
      : '') +
    floorText +
    ` Once a minute per API key, authentication also writes the key's \`last_used_at\` (a commit on that one request's path; the warm-up makes them before the window).`
  );
}

export function latencyAnalysis(input: LatencyReportInput): string {
  const bareRounds = input.measurements.find((r) => r.median.kind === 'ceiling');
  if (!bareRounds) return '';
  const bare = bareRounds.median;
  const of = (kind: 'app' | 'floor', dialect: 'sqlite' | 'postgres') =>
    input.measurements.find((r) => r.median.kind === kind && r.median.dialect === dialect);
  const out = [
    `- **Bare Fastify** (p50 ${msText(bare.p50Ms)} ms, p99 ${msText(bare.p99Ms)} ms${bareRounds.runs.length > 1 ? ' in its median round' : ''}) is the round trip itself: the generator's send, the loopback, both processes waking ` +
      `and Node's HTTP on both sides. Every other figure includes it.`,
  ];
  const sqlite = of('app', 'sqlite');
  if (sqlite) out.push(...sqliteParagraphs(bareRounds, sqlite, of('floor', 'sqlite')));
  const postgres = of('app', 'postgres');
  if (postgres) out.push(postgresParagraph(bareRounds, postgres, of('floor', 'postgres')));
  return `### Where a request's time goes\n\n${out.join('\n')}\n`;
}
