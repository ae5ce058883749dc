/**
 * The worker's job that deletes webhook events older than CALLGATE_EVENT_RETENTION_DAYS whose deliveries
 * are all finished (succeeded, or failed: retries spent or endpoint disabled), with those deliveries and
 * their attempts. An event with a pending delivery is kept whatever its age. Calls are never deleted.
 */
import type { Db } from '../../db/database.js';
import type { Job } from '../../jobs/job-runner.js';
import { retentionJob } from '../../jobs/retention.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { purgeFinishedEvents } from './event-retention.service.js';

/**
 * Events per statement, as a share of the job's row budget: each event brings its deliveries (one per
 * endpoint) and up to eight attempts each, so a tenth of the budget in events stays near it in rows.
 */
const eventsPerRowBudget = 10;

export function eventRetentionJob(deps: { readonly db: Db; readonly days: number }, intervalMs: number, batchSize?: number): Job {
  const retentionMs = deps.days * 24 * 60 * 60 * 1000;
  return retentionJob({
    name: 'webhook-event-retention',
    label: 'webhook event retention',
    intervalMs,
    ...(batchSize === undefined ? {} : { batchSize }),
    steps: [
      async (now, limit) => {
        const events = Math.max(1, Math.floor(limit / eventsPerRowBudget));
        const deleted = await purgeFinishedEvents(deps.db, isoTimestamp(addMs(now, -retentionMs)), events);
        // A full batch of events is a full batch for the runner: more may be waiting.
        return deleted >= events ? limit : deleted;
      },
    ],
  });
}
