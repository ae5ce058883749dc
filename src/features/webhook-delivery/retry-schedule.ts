/**
 * When to try a failed delivery again. The schedule is the list of delays after the first, immediate
 * attempt (CALLGATE_WEBHOOK_RETRY_SCHEDULE, default Svix's `5s,5m,30m,2h,5h,10h,10h`: eight attempts over
 * about 28 hours; config.ts reads it as a list of durations); each delay gets ±20 % jitter so that retries of many deliveries do not arrive together.
 */
export const jitterFraction = 0.2;

export function withJitter(delayMs: number, random: () => number = Math.random): number {
  return Math.max(0, Math.round(delayMs * (1 - jitterFraction + 2 * jitterFraction * random())));
}

/** A receiver's Retry-After (on 429 or 503) is honoured within these bounds. */
export const retryAfterBoundsMs = { min: 1_000, max: 24 * 3_600_000 } as const;

/** Parses Retry-After as seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfterMs(value: string | undefined, nowMs: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1_000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

/**
 * The delay before the next attempt after `attemptsMade` attempts, or null when the schedule is used up.
 * A receiver's Retry-After (on 429 or 503) replaces the scheduled delay, clamped to the bounds.
 */
export function nextDelayMs(
  schedule: readonly number[],
  attemptsMade: number,
  retryAfterMs: number | null,
  random: () => number = Math.random,
): number | null {
  const scheduled = schedule[attemptsMade - 1];
  if (scheduled === undefined) return null;
  if (retryAfterMs === null) return withJitter(scheduled, random);
  return Math.min(retryAfterBoundsMs.max, Math.max(retryAfterBoundsMs.min, retryAfterMs));
}
