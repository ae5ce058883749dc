/**
 * The worker's job that deletes request-log rows past their retention (CALLGATE_REQUEST_LOG_DAYS), and rows of
 * the latency rollup past theirs (40 days), in batches.
 */
import type { Db } from '../../db/database.js';
import type { Job } from '../../jobs/job-runner.js';
import { retentionJob } from '../../jobs/retention.js';
import type { Clock } from '../../lib/clock.js';
import { purgeOldLatency, purgeOldRequests } from './request-log.service.js';

export function requestLogPurgeJob(
  deps: { readonly db: Db; readonly clock: Clock; readonly days: number },
  intervalMs: number,
  batchSize?: number,
): Job {
  return retentionJob({
    name: 'request-log-purge',
    label: 'request log purge',
    intervalMs,
    batchSize,
    steps: [
      (now, limit) => purgeOldRequests(deps.db, { now: () => now }, { days: deps.days, limit }),
      (now, limit) => purgeOldLatency(deps.db, { now: () => now }, limit),
    ],
  });
}
