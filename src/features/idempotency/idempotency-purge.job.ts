/** The worker's job that deletes expired idempotency records, and in-flight ones abandoned past their lock. */
import type { Db } from '../../db/database.js';
import { periodicJob, type Job } from '../../jobs/job-runner.js';
import type { Clock } from '../../lib/clock.js';
import { purgeExpired, type IdempotencySettings } from './idempotency.service.js';

export function idempotencyPurgeJob(
  deps: { readonly db: Db; readonly clock: Clock; readonly idempotency: IdempotencySettings },
  intervalMs: number,
): Job {
  return periodicJob({
    name: 'idempotency-purge',
    label: 'idempotency purge',
    intervalMs,
    run: () => purgeExpired(deps.db, deps.clock, deps.idempotency),
  });
}
