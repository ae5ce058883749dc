/**
 * Fixed one-minute windows counted by rate-limiter-flexible, in the store that every process of a
 * deployment shares: Redis when REDIS_URL is set, else the PostgreSQL database, else process memory
 * (SQLite runs as one process).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateLimitDecision, RateLimiter } from './rate-limit.interface.js';

export type RateLimitStore =
  | { readonly kind: 'memory' }
  | { readonly kind: 'postgres'; readonly pool: pg.Pool }
  | { readonly kind: 'redis'; readonly client: Redis };

export interface RateLimiterOptions {
  readonly store: RateLimitStore;
  /** Separates counters of different limiters in one store. */
  readonly name: string;
  readonly pointsPerWindow: number;
  readonly windowSeconds: number;
}

const windowSecondsDefault = 60;

/**
 * Counters are named from what clients send (an address from X-Forwarded-For, an email of up to 320
 * characters), and PostgreSQL's `rate_limits.key` holds 255: a longer name made the insert fail and the
 * request a 500. Names past this length are counted under their SHA-256 instead, in every store alike.
 */
const keyMaxChars = 100;

export function storedKey(key: string): string {
  return key.length <= keyMaxChars ? key : `sha256:${createHash('sha256').update(key).digest('base64url')}`;
}

function decisionFrom(res: RateLimiterRes, limit: number, windowSeconds: number, allowed: boolean): RateLimitDecision {
  return {
    allowed,
    limit,
    remaining: Math.max(0, res.remainingPoints),
    resetSeconds: Math.max(allowed ? 0 : 1, Math.ceil(res.msBeforeNext / 1000)),
    windowSeconds,
  };
}

async function createStoreLimiter(options: RateLimiterOptions): Promise<RateLimiterAbstract> {
  const base = { points: options.pointsPerWindow, duration: options.windowSeconds, keyPrefix: options.name };
  switch (options.store.kind) {
    case 'memory':
      return new RateLimiterMemory(base);
    case 'redis':
      return new RateLimiterRedis({ ...base, storeClient: options.store.client });
    case 'postgres': {
      const pool = options.store.pool;
      const create = () =>
        new Promise<RateLimiterAbstract>((resolve, reject) => {
          const limiter: RateLimiterPostgres = new RateLimiterPostgres(
            { ...base, storeClient: pool, storeType: 'pool', tableName: 'rate_limits' },
            (error?: unknown) => (error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(limiter)),
          );
        });
      try {
        return await create();
      } catch (error) {
        // Processes starting together on a new database race on the library's CREATE TABLE IF NOT EXISTS:
        // the loser gets "type already exists" (42710) or "relation already exists" (42P07), which the
        // library lets through. The table is there then: a second construction finds it.
        const code = (error as { code?: unknown }).code;
        if (code !== '42710' && code !== '42P07') throw error;
        return await create();
      }
    }
  }
}

export async function createRateLimiter(options: RateLimiterOptions): Promise<RateLimiter> {
  const windowSeconds = options.windowSeconds || windowSecondsDefault;
  const limiter = await createStoreLimiter({ ...options, windowSeconds });
  const limit = options.pointsPerWindow;
  return {
    async consume(key) {
      try {
        const res = await limiter.consume(storedKey(key), 1);
        return decisionFrom(res, limit, windowSeconds, true);
      } catch (rejection) {
        // rate-limiter-flexible rejects with a RateLimiterRes when the limit is reached, with an Error when the store fails.
        if (rejection instanceof RateLimiterRes) return decisionFrom(rejection, limit, windowSeconds, false);
        throw rejection;
      }
    },
    async peek(key) {
      const res = await limiter.get(storedKey(key));
      if (!res) return { allowed: true, limit, remaining: limit, resetSeconds: windowSeconds, windowSeconds };
      return decisionFrom(res, limit, windowSeconds, res.remainingPoints > 0);
    },
    async refund(key) {
      await limiter.reward(storedKey(key), 1);
    },
  };
}

/** IETF httpapi RateLimit fields (draft-ietf-httpapi-ratelimit-headers), so clients can pace themselves. */
export function rateLimitHeaders(decision: RateLimitDecision, policy = 'per-key'): Record<string, string> {
  return {
    'ratelimit-policy': `"${policy}";q=${decision.limit};w=${decision.windowSeconds}`,
    ratelimit: `"${policy}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}
