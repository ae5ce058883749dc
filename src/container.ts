/**
 * Builds the long-lived parts of a process from the config: database, clock, providers, rate limiters and
 * the call monitor. The server and the tests both start here; tests swap in fakes through `overrides`.
 */
import { Redis } from 'ioredis';
import pino, { type Logger } from 'pino';
import type { Config } from './config.js';
import { migrateToLatest, openDatabase, type DatabaseHandle, type Db } from './db/database.js';
import { CallMonitor } from './features/calls/call-monitor.js';
import type { CallsDeps } from './features/calls/calls.service.js';
import { createProviderRegistry, type ProviderRegistry } from './features/providers/provider-registry.js';
import { createSimulatorProvider } from './features/providers/simulator.provider.js';
import type { RateLimiter } from './features/rate-limit/rate-limit.interface.js';
import { createRateLimiter, type RateLimitStore } from './features/rate-limit/rate-limit.store.js';
import { systemClock, type Clock } from './lib/clock.js';

export interface Services {
  readonly config: Config;
  readonly database: DatabaseHandle;
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly providers: ProviderRegistry;
  readonly perKeyLimiter: RateLimiter;
  readonly perIpLimiter: RateLimiter;
  readonly callMonitor: CallMonitor;
  readonly calls: CallsDeps;
  close(): Promise<void>;
}

export interface ServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  providers?: ProviderRegistry;
  perKeyLimiter?: RateLimiter;
  perIpLimiter?: RateLimiter;
  /** How often the call monitor sweeps for due calls. */
  monitorSweepIntervalMs?: number;
}

/** Headers and fields that carry secrets never reach the logs. */
export const logRedactPaths = ['req.headers.authorization', 'req.headers.cookie', 'token', 'secret', 'password'];

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, redact: { paths: logRedactPaths, censor: '[redacted]' } });
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = overrides.logger ?? createLogger(config);
  const clock = overrides.clock ?? systemClock;
  const database = openDatabase(config.database);
  let redis: Redis | undefined;
  try {
    await migrateToLatest(database.db);

    let store: RateLimitStore = { kind: 'memory' };
    if (config.redisUrl) {
      redis = new Redis(config.redisUrl, { enableOfflineQueue: true, maxRetriesPerRequest: 2 });
      store = { kind: 'redis', client: redis };
    } else if (database.dialect === 'postgres') {
      store = { kind: 'postgres', pool: database.pool };
    }
    const windowSeconds = 60;
    const perKeyLimiter =
      overrides.perKeyLimiter ??
      (await createRateLimiter({ store, name: 'cg_key', pointsPerWindow: config.rateLimitPerMinute, windowSeconds }));
    const perIpLimiter =
      overrides.perIpLimiter ??
      (await createRateLimiter({ store, name: 'cg_ip', pointsPerWindow: config.ipRateLimitPerMinute, windowSeconds }));

    const providers =
      overrides.providers ??
      createProviderRegistry({ simulator: createSimulatorProvider({ clock, delayMs: config.simulatorDelayMs }) });

    const callMonitor = new CallMonitor({
      db: database.db,
      clock,
      providers,
      logger,
      ...(overrides.monitorSweepIntervalMs === undefined ? {} : { sweepIntervalMs: overrides.monitorSweepIntervalMs }),
    });

    const calls: CallsDeps = {
      db: database.db,
      clock,
      providers,
      idempotency: { waitMs: config.idempotencyWaitMs, lockMs: config.idempotencyLockMs },
      onCallPlaced: (callId, placedAt) => callMonitor.schedule(callId, new Date(placedAt.getTime() + config.simulatorDelayMs)),
    };

    return {
      config,
      database,
      db: database.db,
      clock,
      logger,
      providers,
      perKeyLimiter,
      perIpLimiter,
      callMonitor,
      calls,
      async close() {
        await callMonitor.stop();
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
