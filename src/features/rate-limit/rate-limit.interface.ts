/** What the HTTP edge needs of a rate limiter; stores (memory, PostgreSQL, Redis) sit behind it. */
export interface RateLimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets (at least 1 when the limit was hit). */
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

export interface RateLimiter {
  /** Counts one request against `key` and says whether it may go on. */
  consume(key: string): Promise<RateLimitDecision>;
  /** The state of `key` without counting a request. */
  peek(key: string): Promise<RateLimitDecision>;
  /** Gives back one request counted against `key` (a sign-in that succeeded was not an attack). */
  refund(key: string): Promise<void>;
}

/** Allows everything; for tests of other features and for the benchmark's ceiling. */
export function noopRateLimiter(limit = Number.MAX_SAFE_INTEGER): RateLimiter {
  const decision: RateLimitDecision = { allowed: true, limit, remaining: limit, resetSeconds: 60, windowSeconds: 60 };
  return { consume: async () => decision, peek: async () => decision, refund: async () => undefined };
}
