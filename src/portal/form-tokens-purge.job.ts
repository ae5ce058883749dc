/**
 * The worker's job that deletes the portal's used key-form tokens once no session that could send the form
 * again is alive (a session's absolute end), in batches.
 */
import type { Db } from '../db/database.js';
import { sessionMaxMs } from '../features/identity/sessions.service.js';
import type { Job } from '../jobs/job-runner.js';
import { retentionJob } from '../jobs/retention.js';
import { addMs, isoTimestamp } from '../lib/clock.js';
import { purgeFormTokensBefore } from './portal-form-tokens.repository.js';

export function formTokensPurgeJob(deps: { readonly db: Db }, intervalMs: number, batchSize?: number): Job {
  return retentionJob({
    name: 'portal-form-tokens-purge',
    label: 'portal form tokens purge',
    intervalMs,
    ...(batchSize === undefined ? {} : { batchSize }),
    steps: [(now, limit) => purgeFormTokensBefore(deps.db, isoTimestamp(addMs(now, -sessionMaxMs)), limit)],
  });
}
