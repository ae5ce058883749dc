/**
 * The worker's job that forgets what was said on calls once CALLGATE_TRANSCRIPT_RETENTION has passed:
 * transcripts, recording sources and analysis data, in batches. It runs at start too, so a shorter retention
 * set by the operator holds from the first minutes, not after the first interval.
 */
import type { Db } from '../../db/database.js';
import type { Job } from '../../jobs/job-runner.js';
import { retentionJob } from '../../jobs/retention.js';
import { purgeExpiredContent } from './call-content.service.js';

export function callContentPurgeJob(deps: { readonly db: Db; readonly retentionMs: number }, intervalMs: number, batchSize?: number): Job {
  return retentionJob({
    name: 'call-content-purge',
    label: 'transcript retention purge',
    intervalMs,
    batchSize,
    runAtStart: true,
    steps: [(now, limit) => purgeExpiredContent(deps.db, now, deps.retentionMs, limit)],
  });
}
