/**
 * What the worker role adds to the metrics: the job runner's wake-ups, passes, claims and lost leases (its
 * observer), each job's lag (seconds since its last good pass), the webhook backlog and the live dispatchers,
 * read at scrape time.
 */
import type { Db } from '../../db/database.js';
import type { JobBeat, JobObserver } from '../../jobs/job-runner.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { openDials } from '../calls/dials.service.js';
import { deliveryBacklog, liveDispatchers } from '../webhook-delivery/deliveries.service.js';
import type { Metrics } from './metrics.js';

export function jobObserver(metrics: Metrics): JobObserver {
  return {
    woken(job, source) {
      metrics.jobWakeups.inc({ job, source });
    },
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
  const backlogGauge = gaugesOfOneRead(metrics, async () => {
    const now = deps.clock.now();
    const { pending, oldestDueAt } = await deliveryBacklog(deps.db, isoTimestamp(now));
    const dispatchers = await liveDispatchers(deps.db, isoTimestamp(now));
    return {
      pending,
      oldestDueAgeSeconds: oldestDueAt === null ? 0 : Math.max(0, (now.getTime() - Date.parse(oldestDueAt)) / 1000),
      dispatchers,
    };
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
  backlogGauge(
    'callgate_webhook_workers_live',
    "Webhook dispatchers (one per worker process) that share each endpoint's slots now, in the whole database.",
    (read) => read.dispatchers,
  );
  const dialGauge = gaugesOfOneRead(metrics, () => openDials(deps.db, deps.clock));
  dialGauge(
    'callgate_dials_unresolved',
    'Dials whose answer was lost (or whose asker stopped) and whose outcome is not known yet.',
    (read) => read.open,
  );
  dialGauge(
    'callgate_dial_oldest_unresolved_age_seconds',
    'How long ago the oldest unresolved dial was sent to its provider (0 when none is open).',
    (read) => read.oldestAgeSeconds,
  );
}

/**
 * Gauges read from one query per scrape: the registry collects them at once, and each after the first joins
 * the first's read. With the database away they read NaN rather than a stale value or a false 0, and the
 * rest of the scrape is still served.
 */
function gaugesOfOneRead<T>(metrics: Metrics, read: () => Promise<T>) {
  let pending: Promise<T | undefined> | undefined;
  const readOnce = () =>
    (pending ??= read()
      .catch(() => undefined)
      .finally(() => {
        pending = undefined;
      }));
  return (name: string, help: string, value: (read: T) => number) =>
    metrics.gauge({
      name,
      help,
      async read(gauge) {
        const result = await readOnce();
        gauge.set(result === undefined ? Number.NaN : value(result));
      },
    });
}
