/** What the measured sections of BENCHMARKS.md (batches, webhook dispatcher) share: input, verdicts, notes, tail. */
import type { Dialect } from '../test/support/test-database.js';
import { cell, dialectName, int, two } from './format.js';
import type { Measurement } from './measure.js';

/** Other processes busier than this during a measured window make it unrepresentative. */
export const noisyOtherCores = 0.25;

/** What every measurement of such a section has. */
export interface SectionMeasurement {
  readonly label: string;
  readonly dialect: Dialect;
  readonly otherCpuCores: number | null;
  readonly logProblems: Measurement['logProblems'];
}

export interface SectionInput<S, M extends SectionMeasurement> {
  readonly settings: S;
  readonly measurements: readonly M[];
  /** Why the PostgreSQL run was skipped, when it was asked for and could not run. */
  readonly postgresSkip: string | null;
  readonly cores: number;
}

/** A target's verdict: not met whatever the figure when the run had problems (`why` says what they break). */
export function verdict(ok: boolean, problems: readonly string[], why: string): string {
  if (problems.length > 0) return `**not met** (${why})`;
  return ok ? 'met' : '**not met**';
}

/** The note on log lines at warn or above in the runs (`runs` names them when there were none). */
export function logNote(measurements: readonly SectionMeasurement[], runs: string): string {
  const logs = measurements
    .filter((m) => m.logProblems.count > 0)
    .map((m) => `${m.label}: ${int(m.logProblems.count)} lines at warn or above, the first: \`${cell(m.logProblems.first ?? '')}\``);
  return logs.length > 0 ? `\nLog lines at warn or above: ${logs.join('; ')}\n` : `\nNo log line at warn or above in the ${runs}.\n`;
}

/** The warning that other processes were busy during a `window`, or nothing. */
export function sharedMachineNote(measurements: readonly SectionMeasurement[], window: string): string {
  const noisiest = Math.max(0, ...measurements.map((m) => m.otherCpuCores ?? 0));
  return noisiest > noisyOtherCores
    ? `\n> **The machine was shared during this run:** other processes used up to ${two(noisiest)} cores during ${window}.\n`
    : '';
}

/** "What limits it": one paragraph per measurement, from its sentences. */
export function perDialect<M extends SectionMeasurement>(measurements: readonly M[], sentences: (m: M) => readonly string[]): string {
  return measurements.map((m) => `- **${dialectName(m.dialect)}.** ${sentences(m).join(' ')}`).join('\n');
}

/** The section's end: the checks, the log note, the targets table and what limits it. */
export function sectionEnd(parts: { checks: readonly string[]; logNote: string; targets: readonly string[]; limits: string }): string {
  return `${parts.checks.join('\n\n')}
${parts.logNote}
### Targets (from the issue)

| target | measured | |
|---|---|---|
${parts.targets.join('\n')}

### What limits it

${parts.limits}
`;
}
