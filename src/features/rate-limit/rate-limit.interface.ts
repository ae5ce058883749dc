import type { SelectStatement } from '../../db/prepared.js';

/** What the HTTP edge needs of a rate limiter; stores (memory, PostgreSQL, Redis) sit behind it. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets (at least 1 when the limit was hit). */
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

/**
 * Another feature's read, for a limiter to run with its count (`countWith`): a SELECT of at most one row, whose
 * `rate_limit_name` column is the name its request is counted under (what `consume` would be given), or null
 * to count nothing.
 */
export interface ReadToCount<P extends object, Row extends { rate_limit_name: string | null }> {
  readonly statement: SelectStatement<P, Row>;
  readonly params: P;
}

/** The read's row (undefined when it found none) and the count of its request (undefined when not counted). */
export interface CountedRead<Row> {
  readonly row: Row | undefined;
  readonly decision: RateLimitDecision | undefined;
}

export interface RateLimiter {
  /** Counts one request against `key` and says whether it may go on. */
  consume(key: string): Promise<RateLimitDecision>;
  /** The state of `key` without counting a request. */
  peek(key: string): Promise<RateLimitDecision>;
  /** Gives back one request counted against `key` (a sign-in that succeeded was not an attack). */
  refund(key: string): Promise<void>;
  /**
   * Offered when the store is PostgreSQL: runs `read` and counts its request in one statement (one round trip
   * and no commit of its own, instead of the read and then `consume`); the decision is `consume`'s.
   */
  readonly countWith?: <P extends object, Row extends { rate_limit_name: string | null }>(
    read: ReadToCount<P, Row>,
  ) => Promise<CountedRead<Row>>;
}

/** Allows everything; for tests of other features and for the benchmark's ceiling. */
export function noopRateLimiter(limit = Number.MAX_SAFE_INTEGER): RateLimiter {
  const decision: RateLimitDecision = { allowed: true, limit, remaining: limit, resetSeconds: 60, windowSeconds: 60 };
  return { consume: async () => decision, peek: async () => decision, refund: async () => undefined };
}
