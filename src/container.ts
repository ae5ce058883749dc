/**
 * Builds the long-lived parts of a process from the config: database, clock, providers, rate limiters and
 * the worker's job runner with its jobs. The server and the tests both start here; tests swap in fakes
 * through `overrides`.
 */
import { Redis } from 'ioredis';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { openDatabase, prepareSchema, type DatabaseHandle, type Db } from './db/database.js';
import { isDatabaseUnavailable } from './db/unavailable.js';
import { BatchDialer } from './features/batches/batch-dialer.job.js';
import type { BatchesDeps } from './features/batches/batches.service.js';
import { recipientPort } from './features/batches/recipient-origin.js';
import { CallMonitor } from './features/calls/call-monitor.job.js';
import { DialJob } from './features/calls/dials.job.js';
import { requestPort } from './features/calls/request-origin.js';
import { idempotencyPurgeJob } from './features/idempotency/idempotency-purge.job.js';
import { requestLogPurgeJob } from './features/request-log/request-log-purge.job.js';
import { sessionsPurgeJob } from './features/identity/sessions-purge.job.js';
import { formTokensPurgeJob } from './portal/form-tokens-purge.job.js';
import { callContentPurgeJob } from './features/calls/call-content-purge.job.js';
import { eventRetentionJob } from './features/webhook-delivery/event-retention.job.js';
import { JobRunner, staggered } from './jobs/job-runner.js';
import type { ReadinessDeps } from './features/health/readiness.service.js';
import { Metrics } from './features/metrics/metrics.js';
import { instrumentProviders } from './features/metrics/provider-metrics.js';
import { jobObserver, watchWorker } from './features/metrics/worker-metrics.js';
import type { CallsDeps } from './features/calls/calls.service.js';
import { providerRegistryFor, type ProviderRegistry } from './features/providers/provider-registry.js';
import { agentDirectoriesFor, type RealProvider } from './features/providers/provider-catalogue.js';
import type { AgentDirectory } from './features/providers/provider.interface.js';
import type { RateLimiter } from './features/rate-limit/rate-limit.interface.js';
import { createLocalNotifier, createPostgresNotifier, type DeliveryNotifier } from './features/webhook-delivery/delivery-notifier.js';
import { WebhookDispatcher } from './features/webhook-delivery/webhook-dispatcher.job.js';
import { createHttpSender, type WebhookSender } from './features/webhook-delivery/webhook-sender.js';
import { createRateLimiter, type RateLimitStore } from './features/rate-limit/rate-limit.store.js';
import { addMs, systemClock, type Clock } from './lib/clock.js';
import { RequestLogWriter } from './features/request-log/request-log.service.js';
import type { SuppressionsDeps } from './features/suppressions/suppressions.service.js';
import type { SignInLimiters } from './features/identity/sessions.service.js';

export interface Services {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The process's metrics registry and instruments (GET /metrics). */
  readonly metrics: Metrics;
  /** What GET /readyz checks: the database, its migrations and, in a worker, the jobs' beats. */
  readonly readiness: ReadinessDeps;
  readonly perKeyLimiter: RateLimiter;
  readonly perIpLimiter: RateLimiter;
  /** The worker role's job runner: the call monitor, the webhook dispatcher, the batch dialer and the purges are its jobs. */
  readonly jobs: JobRunner;
  readonly callMonitor: CallMonitor;
  /** Resolves dials whose provider answer was lost. */
  readonly dialJob: DialJob;
  readonly calls: CallsDeps;
  readonly batchDialer: BatchDialer;
  readonly batches: BatchesDeps;
  readonly suppressions: SuppressionsDeps;
  readonly notifier: DeliveryNotifier;
  readonly dispatcher: WebhookDispatcher;
  readonly requestLog: RequestLogWriter;
  /** Portal sign-in attempts per account and per IP. */
  readonly signInLimiters: SignInLimiters;
  /** The workspaces' agents and numbers (agent sync), of each provider whose key the server has. */
  readonly agentDirectories: ReadonlyMap<RealProvider, AgentDirectory>;
  /** Starts the worker role's jobs: the call monitor, the webhook dispatcher, the batch dialer and the purges. */
  startWorker(): void;
  /**
   * Stops the worker and closes every connection. In-flight deliveries get up to `graceMs` in all (default
   * 10 s) to finish; those still under way then are released for another worker.
   */
  close(graceMs?: number): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  providers?: ProviderRegistry;
  perKeyLimiter?: RateLimiter;
  perIpLimiter?: RateLimiter;
  signInLimiters?: SignInLimiters;
  /** How often the call monitor sweeps for due calls. */
  monitorSweepIntervalMs?: number;
  /** How often the dial job sweeps for dials due a look. */
  dialSweepIntervalMs?: number;
  /**
   * How soon after a lost answer the dial job looks (default 1.1 s, in real time): a test that moves the dials
   * on itself sets it past the runner's wake horizon, so no pass of its own comes between two of its steps.
   */
  dialLostLookMs?: number;
  webhookSender?: WebhookSender;
  /** How often the dispatcher sweeps for due retries and expired leases. */
  dispatcherSweepIntervalMs?: number;
  /** How often the batch dialer looks for recipients to dial and dialing leases that ran out. */
  dialerSweepIntervalMs?: number;
  /** Jitter source of the retry schedule. */
  random?: () => number;
  /** How often expired idempotency records and old request-log rows are deleted. */
  purgeIntervalMs?: number;
  /** Rows per statement of the retention jobs (default 1,000). */
  retentionBatchSize?: number;
}

/** How often expired idempotency records and old request-log rows are deleted. */
const defaultPurgeIntervalMs = 10 * 60 * 1000;

/** Up to how long the batch dialer of a worker waits after a wake-up (see `staggered`): small beside a call. */
const dialerWakeSpreadMs = 5;

/** Headers and fields that carry secrets never reach the logs. */
export const logRedactPaths = ['req.headers.authorization', 'req.headers.cookie', 'token', 'secret', 'password'];

/**
 * Lines go to standard output with one write(2) each, from the event loop. pino's default writes through
 * libuv's thread pool, and each line cost a hand-off to a thread and a callback back on the event loop:
 * about 0.1 ms of CPU per line when requests come one at a time (an access line per request, a line per
 * ended call), more than the write itself; it was a tenth of the CPU of a created call at 200 requests/s.
 * A synchronous write is also how Node writes its own stdout to files and pipes, and a line written has
 * reached the kernel, so a kill -9 loses none.
 */
export function createLogger(config: Config): Logger {
  return pino(
    { level: config.logLevel, redact: { paths: logRedactPaths, censor: '[redacted]' } },
    pino.destination({ dest: process.stdout.fd ?? 1, sync: true }),
  );
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = overrides.logger ?? createLogger(config);
  const clock = overrides.clock ?? systemClock;
  const metrics = new Metrics();
  const database = openDatabase(config.database, {
    backgroundCheckpoints: true,
    onCheckpointerError: (error) => logger.warn({ err: error }, 'SQLite checkpoints run inside commits again'),
  });
  let redis: Redis | undefined;
  try {
    await prepareSchema(database.db, { migrate: config.migrateOnStart });

    let store: RateLimitStore = { kind: 'memory' };
    if (config.redisUrl) {
      redis = new Redis(config.redisUrl, { enableOfflineQueue: true, maxRetriesPerRequest: 2 });
      store = { kind: 'redis', client: redis };
    } else if (database.dialect === 'postgres') {
      store = { kind: 'postgres', pool: database.counterPool };
    }
    const windowSeconds = 60;
    const perKeyLimiter =
      overrides.perKeyLimiter ??
      (await createRateLimiter({ store, name: 'cg_key', pointsPerWindow: config.rateLimitPerMinute, windowSeconds }));
    const perIpLimiter =
      overrides.perIpLimiter ??
      (await createRateLimiter({ store, name: 'cg_ip', pointsPerWindow: config.ipRateLimitPerMinute, windowSeconds }));
    const signInWindowSeconds = 15 * 60;
    const signInLimiters = overrides.signInLimiters ?? {
      perAccount: await createRateLimiter({
        store,
        name: 'cg_signin_acct',
        pointsPerWindow: config.portalSignInPerAccount,
        windowSeconds: signInWindowSeconds,
      }),
      perAccountIp: await createRateLimiter({
        store,
        name: 'cg_signin_acct_ip',
        pointsPerWindow: config.portalSignInPerAccountIp,
        windowSeconds: signInWindowSeconds,
      }),
      perIp: await createRateLimiter({
        store,
        name: 'cg_signin_ip',
        pointsPerWindow: config.portalSignInPerIp,
        windowSeconds: signInWindowSeconds,
      }),
    };

    const providers = instrumentProviders(overrides.providers ?? providerRegistryFor(config, clock), metrics);

    const notifier =
      database.dialect === 'postgres' && config.database.dialect === 'postgres'
        ? createPostgresNotifier(database.pool, config.database.url, logger)
        : createLocalNotifier();
    const jobs = new JobRunner({ clock, logger, observer: jobObserver(metrics) });
    const sender =
      overrides.webhookSender ?? createHttpSender({ timeoutMs: config.webhookTimeoutMs, allowPrivate: config.webhookAllowPrivate });
    const dispatcher = new WebhookDispatcher({
      db: database.db,
      clock,
      sender,
      wakeOn: notifier,
      logger,
      runner: jobs,
      retryScheduleMs: config.webhookRetryScheduleMs,
      timeoutMs: config.webhookTimeoutMs,
      concurrency: config.webhookConcurrency,
      endpointConcurrency: config.webhookEndpointConcurrency,
      metrics,
      ...(overrides.dispatcherSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.dispatcherSweepIntervalMs }),
      ...(overrides.random === undefined ? {} : { random: overrides.random }),
    });

    const callMonitor = new CallMonitor({
      db: database.db,
      clock,
      providers,
      logger,
      runner: jobs,
      onEvents: () => notifier.notify(),
      // A batch's call ended: its batch has a free slot for the next recipient, which any worker may dial
      // (the notifier wakes this one's dialer at once, and those of other processes through NOTIFY).
      onBatchCallEnded: () => notifier.notify(),
      metrics,
      ...(overrides.monitorSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.monitorSweepIntervalMs }),
    });

    const requestLog = new RequestLogWriter(database.db, logger);
    const purgeIntervalMs = overrides.purgeIntervalMs ?? defaultPurgeIntervalMs;
    const idempotency = { waitMs: config.idempotencyWaitMs, lockMs: config.idempotencyLockMs, observer: metrics.idempotencyObserver };
    // The purges are jobs of the worker role: in the documented multi-process setup an api-only process
    // always runs beside a worker, and one worker purging is enough for all.
    const batchSize = overrides.retentionBatchSize;
    jobs.add(idempotencyPurgeJob({ db: database.db, clock, idempotency }, purgeIntervalMs, batchSize));
    jobs.add(requestLogPurgeJob({ db: database.db, clock, days: config.requestLogDays }, purgeIntervalMs, batchSize));
    jobs.add(eventRetentionJob({ db: database.db, days: config.eventRetentionDays }, purgeIntervalMs, batchSize));
    jobs.add(sessionsPurgeJob({ db: database.db }, purgeIntervalMs, batchSize));
    jobs.add(formTokensPurgeJob({ db: database.db }, purgeIntervalMs, batchSize));
    jobs.add(callContentPurgeJob({ db: database.db, retentionMs: config.transcriptRetentionMs }, purgeIntervalMs, batchSize));

    const dialJob = new DialJob({
      db: database.db,
      clock,
      providers,
      logger,
      runner: jobs,
      // Each kind of a dial's origin (dial-origin.ts), so that the dial job reaches the batches without importing them.
      origins: { request: requestPort(clock), recipient: recipientPort(clock) },
      onCallPlaced: (callId, checkAt) => callMonitor.schedule(callId, checkAt),
      onEvents: () => notifier.notify(),
      onResolved: (result) => metrics.dialsResolved.inc({ result }),
      observeEnded: (call) => metrics.callEnded(call),
      ...(overrides.dialSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.dialSweepIntervalMs }),
    });

    const calls: CallsDeps = {
      db: database.db,
      clock,
      providers,
      idempotency,
      dials: { searchWindowMs: config.dialSearchWindowMs, providerTimeoutMs: config.providerTimeoutMs },
      // Its first look is due in a second or so; a sweep finds it then, whatever process recorded it.
      onDialLost: () => dialJob.wakeAt(addMs(clock.now(), overrides.dialLostLookMs ?? 1_100)),
      onCallPlaced: (callId, checkAt) => callMonitor.schedule(callId, checkAt),
      onStoreRetry: ({ callId, stored, error }) => {
        if (stored) logger.info({ callId }, 'a placed call was stored once the database was back');
        else if (isDatabaseUnavailable(error))
          logger.warn({ callId, err: error }, 'the database is still unavailable; storing a placed call again soon');
        else logger.error({ callId, err: error }, 'storing a placed call failed; it is not retried');
      },
    };

    const batchDialer = new BatchDialer({
      db: database.db,
      clock,
      logger,
      runner: jobs,
      calls,
      // New and resumed batches, and calls of a batch that ended, wake it through the notifier, in every worker
      // process on PostgreSQL; staggered, so that the workers share the slots that free.
      wakeOn: staggered(notifier, dialerWakeSpreadMs),
      leaseMs: config.batchDialLeaseMs,
      onEvents: () => notifier.notify(),
      ...(overrides.dialerSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.dialerSweepIntervalMs }),
      ...(overrides.random === undefined ? {} : { random: overrides.random }),
    });
    const batches: BatchesDeps = {
      db: database.db,
      clock,
      idempotency,
      providers,
      wakeWorkers: () => notifier.notify(),
      onCallPlaced: (callId, checkAt) => callMonitor.schedule(callId, checkAt),
    };
    const suppressions: SuppressionsDeps = { db: database.db, clock, idempotency };

    if (config.roles.has('worker')) watchWorker(metrics, { db: database.db, clock, jobs });

    return {
      config,
      database,
      db: database.db,
      clock,
      logger,
      metrics,
      readiness: { db: database.db, clock, jobs: config.roles.has('worker') ? jobs : undefined },
      perKeyLimiter,
      perIpLimiter,
      jobs,
      callMonitor,
      dialJob,
      calls,
      batchDialer,
      batches,
      suppressions,
      notifier,
      dispatcher,
      agentDirectories: agentDirectoriesFor(config),
      requestLog,
      signInLimiters,
      startWorker() {
        jobs.start();
      },
      async close(graceMs) {
        await jobs.stop(graceMs);
        await requestLog.flush();
        await notifier.close();
        sender.close();
        if (redis) redis.disconnect();
        await database.destroy();
      },
    };
  } catch (error) {
    if (redis) redis.disconnect();
    await database.destroy();
    throw error;
  }
}
