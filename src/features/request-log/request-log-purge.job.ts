/** The worker's job that deletes request-log rows past their retention. */
import type { Db } from '../../db/database.js';
import { periodicJob, type Job } from '../../jobs/job-runner.js';
import type { Clock } from '../../lib/clock.js';
import { purgeOldRequests } from './request-log.service.js';

export function requestLogPurgeJob(deps: { readonly db: Db; readonly clock: Clock }, intervalMs: number): Job {
  return periodicJob({
    name: 'request-log-purge',
    label: 'request log purge',
    intervalMs,
    run: () => purgeOldRequests(deps.db, deps.clock),
  });
}
