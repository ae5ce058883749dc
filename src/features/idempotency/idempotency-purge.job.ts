/** The worker's job that deletes expired idempotency records, and in-flight ones abandoned past their lock, in batches. */
import type { Db } from '../../db/database.js';
import type { Job } from '../../jobs/job-runner.js';
import { retentionJob } from '../../jobs/retention.js';
import type { Clock } from '../../lib/clock.js';
import { purgeExpired, type IdempotencySettings } from './idempotency.service.js';

export function idempotencyPurgeJob(
  deps: { readonly db: Db; readonly clock: Clock; readonly idempotency: IdempotencySettings },
  intervalMs: number,
  batchSize?: number,
): Job {
  return retentionJob({
    name: 'idempotency-purge',
    label: 'idempotency purge',
    intervalMs,
    batchSize,
    steps: [(now, limit) => purgeExpired(deps.db, { now: () => now }, deps.idempotency, limit)],
  });
}
