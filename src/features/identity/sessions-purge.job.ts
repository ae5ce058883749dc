/**
 * The worker's job that deletes ended portal sessions (past their absolute end, or idle too long), in
 * batches. Sign-in also removes some; this keeps the table small for users who never sign in again.
 */
import type { Db } from '../../db/database.js';
import type { Job } from '../../jobs/job-runner.js';
import { retentionJob } from '../../jobs/retention.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { purgeEndedSessions } from './sessions.repository.js';
import { sessionIdleMs } from './sessions.service.js';

export function sessionsPurgeJob(deps: { readonly db: Db }, intervalMs: number, batchSize?: number): Job {
  return retentionJob({
    name: 'sessions-purge',
    label: 'portal sessions purge',
    intervalMs,
    batchSize,
    steps: [(now, limit) => purgeEndedSessions(deps.db, isoTimestamp(now), isoTimestamp(addMs(now, -sessionIdleMs)), limit)],
  });
}
