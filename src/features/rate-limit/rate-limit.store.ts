/**
 * Fixed one-minute windows counted by rate-limiter-flexible, in the store that every process of a
 * deployment shares: Redis when REDIS_URL is set, else the PostgreSQL database, else process memory
 * (SQLite runs as one process). On PostgreSQL a limiter can also count in another feature's read
 * (`countWith`, rate-limit.repository.ts), writing the library's rows and deciding as it does.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type pg from 'pg';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { postgresDb } from '../../db/database.js';
import type { RateLimitDecision, RateLimiter } from './rate-limit.interface.js';
import * as repo from './rate-limit.repository.js';

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

/**
 * The decision of a count the counting statement made (rate-limit.repository.ts), as `consume` makes it of the
 * library's: its RateLimiterRes as RateLimiterPostgres builds one from the row its upsert returns, refused past
 * the limit.
 */
function countedDecision(points: number, expire: string | null, limit: number, windowSeconds: number): RateLimitDecision {
  const msBeforeNext = expire === null ? -1 : Math.max(Number(expire) - Date.now(), 0);
  const res = new RateLimiterRes(Math.max(limit - points, 0), msBeforeNext, points, points === 1);
  return decisionFrom(res, limit, windowSeconds, points <= limit);
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
  const store = options.store;
  const rateLimiter: RateLimiter = {
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
  if (store.kind !== 'postgres') return rateLimiter;
  const db = postgresDb(store.pool);
  return {
    ...rateLimiter,
    async countWith(read) {
      const nowMs = Date.now();
      const params = { counterPrefix: `${options.name}:`, nowMs, expireMs: nowMs + windowSeconds * 1000, maxNameChars: keyMaxChars };
      const { row, points, expire } = await repo.readCounting(db, read, params);
      const name = row?.rate_limit_name ?? null;
      if (name === null) return { row, decision: undefined };
      if (points !== null) return { row, decision: countedDecision(points, expire, limit, windowSeconds) };
      // A name `storedKey` hashes: counted by the library, under its hash.
      return { row, decision: await rateLimiter.consume(name) };
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
