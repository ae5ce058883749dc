/**
 * The "what limits it" part of BENCHMARKS.md: reads the measurements (CPU per call, event loop, statements by
 * the part of the service that sent them, the call monitor's backlog, the profile) and says it in sentences.
 */
import { ms, type Measurement } from './measure.js';
import { cell, dialectName, int, one, p99MaxMs, pct, pctFigure, postgresMinShare, sqliteMinShare, two } from './format.js';
import type { ProfileRun, ReportInput } from './report.js';
import { perRound, withRounds, type Rounds } from './rounds.js';

/** Which part of the service sends a statement, read from its text. */
function partOf(sql: string): string {
  // The key's read, which counts the per-key limit on PostgreSQL (the limiter's countWith), is the request's.
  if (/rate_limits/i.test(sql) && !/\bapi_keys\b/.test(sql)) return 'rate limiter';
  if (/^(begin|commit|rollback)\b/i.test(sql)) return 'transaction control';
  if (/^(with "inserted" as \()?insert into "calls"/.test(sql)) return 'request';
  if (/\bcalls\b/.test(sql)) return 'call monitor';
  if (/"(webhook|event|deliver)|^(NOTIFY|LISTEN)\b/i.test(sql)) return 'webhooks';
  return 'request';
}

export function statementTable(m: Measurement): string {
  const rows = m.statementMix
    .filter((s) => s.perRequest >= 0.01)
    .map((s) => `| ${partOf(s.sql)} | \`${cell(s.sql.length > 110 ? `${s.sql.slice(0, 107)}…` : s.sql)}\` | ${two(s.perRequest)} |`);
  return `| part | statement | per request |\n|---|---|---|\n${rows.join('\n')}`;
}

function perPart(m: Measurement): Map<string, number> {
  const parts = new Map<string, number>();
  for (const s of m.statementMix) parts.set(partOf(s.sql), (parts.get(partOf(s.sql)) ?? 0) + s.perRequest);
  return parts;
}

/** Share of the profile spent compiling SQL text into SQLite statements. */
function prepareShare(profile: ProfileRun | undefined): number {
  return profile?.summary.components.find((c) => c.name.startsWith('SQLite: preparing'))?.share ?? 0;
}

/** More than a tenth of the calls overdue for their check when the server stopped. */
function monitorBehind(m: Measurement): boolean {
  return m.calls !== null && m.calls.total > 0 && m.calls.overdue / m.calls.total > 0.1;
}

/**
 * A target's own figures are its median round's; a figure comparing two targets is the median of the comparison
 * made within each round (bench/rounds.ts), with each round's in brackets.
 */
export function limits(input: ReportInput, ceilingRounds: Rounds<Measurement> | undefined): string {
  const out: string[] = [];
  const connections = input.load.connections;
  const ceiling = ceilingRounds?.median;
  for (const rounds of input.measurements) {
    const m = rounds.median;
    if (m.kind !== 'app' || !m.dialect) continue;
    const name = dialectName(m.dialect);
    const profile = input.profiles.find((p) => p.dialect === m.dialect);
    // Statements are counted in the diagnostic (profiled) run only.
    const diagnostic = profile?.measurement;
    const top = profile?.summary.components
      .filter((c) => !c.name.startsWith('benchmark'))
      .slice(0, 5)
      .map((s) => `${s.name} ${pct(s.share)}`)
      .join('; ');
    const costRatio =
      ceilingRounds && ceiling
        ? perRound(rounds, ceilingRounds, (a, c) => a.serverCpuMsPerRequest / Math.max(0.001, c.serverCpuMsPerRequest))
        : null;
    const text: string[] = [];
    text.push(
      `The server process spent **${two(m.serverCpuMsPerRequest)} ms of CPU per created call**` +
        (costRatio && ceiling
          ? costRatio.rounds.length > 1
            ? ` (${int(costRatio.median)}× the ceiling's in the same round, rounds ${costRatio.rounds.map(int).join(' / ')}×; ` +
              `the ceiling spent ${two(ceiling.serverCpuMsPerRequest)} ms in its median round)`
            : ` (${int(costRatio.median)}× the ceiling's ${two(ceiling.serverCpuMsPerRequest)} ms)`
          : '') +
        `, so even a core of its own would give it at most about ${int(1000 / Math.max(0.001, m.serverCpuMsPerRequest))} calls/s.`,
    );
    text.push(
      `Its event loop was busy ${pct(m.serverEventLoopBusy)} of the window on ${two(m.serverCpuCores)} cores of CPU` +
        (m.serverEventLoopBusy > 0.9
          ? `: it is bound by its one JavaScript thread${m.serverCpuCores < 0.9 ? ' (busy for longer than it ran on a CPU: the difference went waiting for a core or blocked in the kernel)' : ''}.`
          : ': it was not saturated, the rest of the time went waiting on the database.') +
        (m.postgresCpuCores !== null ? ` The PostgreSQL backends used another ${two(m.postgresCpuCores)} cores.` : ''),
    );
    if (diagnostic?.statementsPerRequest) {
      const parts = [...perPart(diagnostic)]
        .sort((a, b) => b[1] - a[1])
        .map(([part, n]) => `${one(n)} ${part}`)
        .join(', ');
      text.push(
        `In the diagnostic run each call took **${one(diagnostic.statementsPerRequest)} SQL statements** (${parts})` +
          (m.dialect === 'sqlite'
            ? `, the hot ones prepared once (src/db/prepared.ts) and the rest built by Kysely, all run synchronously on the event loop${prepareShare(profile) > 0.05 ? `; SQLite parsing and planning statements took ${pct(prepareShare(profile))} of the profiled time` : ''}.`
            : `, the hot ones prepared once (src/db/prepared.ts) and the rest built by Kysely, each sent as its own round trip through the ${m.postgresConnections ?? '?'} connections the process held (pg_stat_activity), shared by the ${connections} requests in flight and the worker.`),
      );
    }
    if (m.calls && m.calls.total > 0) {
      text.push(
        monitorBehind(m)
          ? `**The call monitor fell behind:** ${int(m.calls.overdue)} of ${int(m.calls.total)} calls were overdue for their check when the server stopped (${int(m.calls.ended)} ended), so this rate leaves out most of the work of ending calls; sustained, that work comes on top.`
          : `The call monitor kept up (${int(m.calls.ended)} of ${int(m.calls.total)} calls ended, ${int(m.calls.overdue)} overdue at the end); its work is inside the CPU per call.`,
      );
    }
    if (m.loopDelayMaxMs > 50) {
      text.push(
        `Ready callbacks waited up to ${int(m.loopDelayMaxMs)} ms for the event loop (p99 ${int(m.loopDelayP99Ms)} ms)` +
          (m.dialect === 'sqlite'
            ? `: better-sqlite3 runs every statement synchronously and Kysely\u2019s promises resolve as microtasks, so nothing yields to the event loop before it ends: a turn of the loop runs every ready request from start to end (${connections} × ${two(m.serverCpuMsPerRequest)} ms ≈ ${int(connections * m.serverCpuMsPerRequest)} ms here) and any call-monitor sweep that fell due (up to 100 calls, several statements each, started by a timer per placed call), while timers and new requests wait.`
            : '.'),
      );
    }
    if (top) text.push(`Largest costs in the profile: ${top}.`);
    out.push(`- **${name}.** ${text.join(' ')}`);
  }

  const of = (kind: Measurement['kind'], dialect: Measurement['dialect']) =>
    input.measurements.find((r) => r.median.kind === kind && r.median.dialect === dialect);
  const sqliteRounds = of('app', 'sqlite');
  const postgresRounds = of('app', 'postgres');
  const sqlite = sqliteRounds?.median;
  const postgres = postgresRounds?.median;
  const shareText = (p: { median: number; rounds: readonly number[] }) => withRounds(p, pctFigure, ' %');
  const floors = input.measurements.filter((r) => r.median.kind === 'floor' && r.median.dialect);
  if (ceilingRounds && floors.length > 0) {
    const described = floors.map((floorRounds) => {
      const floor = floorRounds.median;
      const share = perRound(floorRounds, ceilingRounds, (f, c) => f.requestsPerSecond / Math.max(1, c.requestsPerSecond));
      const target = floor.dialect === 'sqlite' ? sqliteMinShare : postgresMinShare;
      const service = floor.dialect === 'sqlite' ? sqliteRounds : postgresRounds;
      const ofFloor = service && perRound(service, floorRounds, (a, f) => a.requestsPerSecond / Math.max(1, f.requestsPerSecond));
      const added = service && perRound(service, floorRounds, (a, f) => a.serverCpuMsPerRequest - f.serverCpuMsPerRequest);
      return (
        `${dialectName(floor.dialect)} ${int(floor.requestsPerSecond)} req/s, ${shareText(share)} of the ceiling ` +
        `(target ${pct(target)}: ${share.median >= target ? 'within reach of the stack' : '**below it before any code of the service runs**'}), ` +
        `${two(floor.serverCpuMsPerRequest)} ms of CPU and p99 ${ms(floor.p99Ms)} ms` +
        (ofFloor && added
          ? `; the service does **${shareText(ofFloor)}** of the floor's rate, ` +
            `its own code adding ${withRounds(added, two, ' ms')} of CPU per call`
          : '')
      );
    });
    out.push(
      `- **The floor of this stack.** With the statements a created call needs written by hand on the raw driver behind a bare ` +
        `Fastify route (no Kysely, logging, hooks, request log or call monitor): ${described.join('; ')}.`,
    );
  }
  if (ceilingRounds && ceiling && sqliteRounds && sqlite) {
    const needed = sqliteMinShare * ceiling.requestsPerSecond;
    const neededPostgres = postgresMinShare * ceiling.requestsPerSecond;
    // Within each round: the CPU a call may cost at the target share of that round's ceiling, against what it cost.
    const cheaper = perRound(
      sqliteRounds,
      ceilingRounds,
      (a, c) => a.serverCpuMsPerRequest / (1000 / (sqliteMinShare * c.requestsPerSecond)),
    );
    const faster =
      postgresRounds &&
      perRound(postgresRounds, ceilingRounds, (a, c) => (postgresMinShare * c.requestsPerSecond) / Math.max(1, a.requestsPerSecond));
    out.push(
      `- **Against the targets.** ${pct(sqliteMinShare)} of this ceiling is ${int(needed)} calls/s, at most ${two(1000 / needed)} ms of CPU per call on one core: ` +
        `${withRounds(cheaper, one, '×')} less than SQLite costs now. ` +
        (postgres && faster
          ? `${pct(postgresMinShare)} is ${int(neededPostgres)} calls/s, ${withRounds(faster, one, '×')} the PostgreSQL rate measured${monitorBehind(postgres) ? ", a rate that left the call monitor's work undone" : ''}. `
          : '') +
        `Latency follows from throughput: with ${connections} connections always waiting, a request's mean time is about ` +
        `${connections} / throughput (Little's law), ${int((connections / Math.max(1, sqlite.requestsPerSecond)) * 1000)} ms at the SQLite rate measured; ` +
        `a p99 under ${p99MaxMs} ms at this concurrency needs more than ${int(connections / (p99MaxMs / 1000))} calls/s.`,
    );
  }
  if (ceiling) {
    out.push(
      `- **Ceiling.** ${int(ceiling.requestsPerSecond)} req/s with the server at ${two(ceiling.serverCpuCores)} cores and autocannon at ` +
        `${two(ceiling.loadGeneratorCpuCores)} cores` +
        (ceiling.loadGeneratorCpuCores > 0.85
          ? ': autocannon is near one full core, so the ceiling is partly load-generator-bound and the ratios above flatter the service.'
          : '.'),
    );
  }
  return out.join('\n');
}
