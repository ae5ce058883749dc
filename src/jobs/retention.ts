/**
 * Retention jobs of the worker role: tables that grow with every request and delivery are trimmed in
 * bounded batches. Each statement deletes at most `retentionBatchSize` rows, so it holds its locks (SQLite's
 * one writer lock, PostgreSQL's row locks) for milliseconds, never for a whole backlog; a pass that deleted
 * a full batch yields to the event loop and asks the runner for the next pass at once.
 */
import type { Job } from './job-runner.js';

/** Rows per delete statement. */
export const retentionBatchSize = 1_000;

/** One kind of expired row: deletes at most `limit` of them and says how many it deleted. */
export type RetentionStep = (now: Date, limit: number) => Promise<number>;

export function retentionJob(spec: {
  readonly name: string;
  readonly label: string;
  readonly intervalMs: number;
  readonly steps: readonly RetentionStep[];
  /** Rows per statement; `retentionBatchSize` when not given (tests give a small one). */
  readonly batchSize?: number | undefined;
  /** Whether the first pass runs when the worker starts rather than an interval later. */
  readonly runAtStart?: boolean;
}): Job {
  const limit = spec.batchSize ?? retentionBatchSize;
  return {
    name: spec.name,
    label: spec.label,
    intervalMs: spec.intervalMs,
    runAtStart: spec.runAtStart ?? false,
    async runOnce({ now, stopping }) {
      let more = false;
      for (const step of spec.steps) {
        if (stopping()) return { more: false };
        if ((await step(now, limit)) >= limit) more = true;
        // Requests and other jobs get a turn between two statements (SQLite's driver is synchronous).
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return { more };
    },
  };
}
