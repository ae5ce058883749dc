/** Number formats and the targets, shared by the report and its analysis. */
import type { Dialect } from '../test/support/test-database.js';
import type { Rounds } from './rounds.js';

/** The targets. */
export const sqliteMinShare = 0.4;
export const postgresMinShare = 0.2;
export const p99MaxMs = 20;
/** The service's share of the floor's throughput when the issue asked for it to go up. */
export const sqliteFloorShareBefore = 0.66;
export const postgresFloorShareBefore = 0.7;

/** A share as a percentage without its unit, for lists of rounds ("65 / 67 / 70 %"). */
export const pctFigure = (share: number) => (share * 100).toFixed(share < 0.1 ? 1 : 0);
export const pct = (share: number) => `${pctFigure(share)} %`;
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const one = (n: number) => n.toFixed(1);
export const two = (n: number) => n.toFixed(2);
export const cell = (text: string) => text.replace(/\|/g, '\\|');
export const dialectName = (d: Dialect | null) => (d === 'postgres' ? 'PostgreSQL' : 'SQLite');

/** A target with a failed request in any round is not met, whatever its figures. */
export function verdict(ok: boolean, r: Rounds<{ readonly non2xx: number; readonly errors: number }>): string {
  const failed = r.runs.reduce((sum, m) => sum + m.non2xx + m.errors, 0);
  if (failed > 0) return `**not met** (${int(failed)} failed requests${r.runs.length > 1 ? ' over its rounds' : ''})`;
  return ok ? 'met' : '**not met**';
}
