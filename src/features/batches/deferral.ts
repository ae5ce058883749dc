import type { ProviderFailure } from '../providers/provider.interface.js';

/**
 * Backoff of a recipient the provider could not take now (a 429, unavailable, or a call refused at its
 * concurrency limit): 1 s, doubling with each deferral, at most 5 minutes (±20 %), and never before the
 * provider's Retry-After.
 */
const backoffStartMs = 1_000;
const backoffMaxMs = 5 * 60_000;

export function deferralDelayMs(
  deferrals: number,
  failure: Extract<ProviderFailure, { kind: 'unavailable' }>,
  random: () => number,
): number {
  const exponential = Math.min(backoffMaxMs, backoffStartMs * 2 ** Math.min(deferrals, 20));
  const jittered = Math.round(exponential * (0.8 + 0.4 * random()));
  return Math.max(jittered, Math.min(backoffMaxMs, (failure.retryAfterSeconds ?? 0) * 1000));
}
