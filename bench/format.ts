/** Number formats and the targets, shared by the report and its analysis. */
import type { Dialect } from '../test/support/test-database.js';

/** The targets. */
export const sqliteMinShare = 0.4;
export const postgresMinShare = 0.2;
export const p99MaxMs = 20;

export const pct = (share: number) => `${(share * 100).toFixed(share < 0.1 ? 1 : 0)} %`;
export const int = (n: number) => Math.round(n).toLocaleString('en-US');
export const one = (n: number) => n.toFixed(1);
export const two = (n: number) => n.toFixed(2);
export const cell = (text: string) => text.replace(/\|/g, '\\|');
export const dialectName = (d: Dialect | null) => (d === 'postgres' ? 'PostgreSQL' : 'SQLite');
