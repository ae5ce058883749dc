/**
 * What the worker role adds to the metrics: the job runner's passes, claims and lost leases (its
 * observer), each job's lag (seconds since its last good pass) and the webhook backlog, read at scrape time.
 */
import type { Db } from '../../db/database.js';
import type { JobBeat, JobObserver } from '../../jobs/job-runner.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { openDials } from '../calls/dials.service.js';
import { deliveryBacklog } from '../webhook-delivery/deliveries.service.js';
import type { Metrics } from './metrics.js';

export function jobObserver(metrics: Metrics): JobObserver {
  return {
    passEnded(job, result, durationMs, claimed) {
      metrics.jobPasses.inc({ job, result });
      metrics.jobPassDuration.observe({ job }, durationMs / 1000);
      if (claimed > 0) metrics.jobClaims.inc({ job }, claimed);
    },
    leaseLost(job, count) {
      metrics.jobLeaseLosses.inc({ job }, count);
    },
  };
}

export function watchWorker(metrics: Metrics, deps: { db: Db; clock: Clock; jobs: { beats(): JobBeat[] } }): void {
  metrics.gauge({
    name: 'callgate_job_seconds_since_last_pass',
    help: 'Seconds since each worker job last ended a pass well (its lag): past twice its interval, /readyz fails.',
    labelNames: ['job'],
    read(gauge) {
      gauge.reset();
      const now = deps.clock.now().getTime();
      for (const beat of deps.jobs.beats()) {
        gauge.set({ job: beat.name }, (now - (beat.lastPassAt ?? beat.startedAt).getTime()) / 1000);
      }
    },
  });
  // Both gauges come from one query pair per scrape: the registry collects them at once, and the second
  // joins the first's queries. With the database away they read NaN rather than a stale value or a false 0,
  // and the rest of the scrape is still served.
  let backlog: Promise<{ pending: number; oldestDueAgeSeconds: number } | undefined> | undefined;
  const readBacklog = () =>
    (backlog ??= (async () => {
      const now = deps.clock.now();
      try {
        const { pending, oldestDueAt } = await deliveryBacklog(deps.db, isoTimestamp(now));
        const oldestDueAgeSeconds = oldestDueAt === null ? 0 : Math.max(0, (now.getTime() - Date.parse(oldestDueAt)) / 1000);
        return { pending, oldestDueAgeSeconds };
      } catch {
        return undefined;
      }
    })().finally(() => {
      backlog = undefined;
    }));
  const backlogGauge = (name: string, help: string, value: (read: { pending: number; oldestDueAgeSeconds: number }) => number) =>
    metrics.gauge({
      name,
      help,
      async read(gauge) {
        const read = await readBacklog();
        gauge.set(read ? value(read) : Number.NaN);
      },
    });
  backlogGauge(
    'callgate_webhook_deliveries_pending',
    'Webhook deliveries waiting for an attempt (due now or later), in the whole database.',
    (read) => read.pending,
  );
  backlogGauge(
    'callgate_webhook_oldest_due_age_seconds',
    'How long the oldest due webhook delivery has waited past its attempt time (0 when none is due).',
    (read) => read.oldestDueAgeSeconds,
  );
  metrics.gauge({
    name: 'callgate_dials_unresolved',
    help: 'Dials whose answer was lost (or whose asker stopped) and whose outcome is not known yet.',
    async read(gauge) {
      gauge.set(
        await openDials(deps.db, deps.clock).then(
          (read) => read.open,
          () => Number.NaN,
        ),
      );
    },
  });
  metrics.gauge({
    name: 'callgate_dial_oldest_unresolved_age_seconds',
    help: 'How long ago the oldest unresolved dial was sent to its provider (0 when none is open).',
    async read(gauge) {
      gauge.set(
        await openDials(deps.db, deps.clock).then(
          (read) => read.oldestAgeSeconds,
          () => Number.NaN,
        ),
      );
    },
  });
}
