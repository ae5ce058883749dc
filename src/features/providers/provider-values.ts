/**
 * Values from a provider's signed data, made safe to store: timestamps within belief, durations within a
 * day, text without U+0000. Shared by the adapters; each reports what it replaced through `OnAdjusted`.
 */

function finiteNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/**
 * The longest call we believe. Providers end conversations at the agent's maximum duration (ElevenLabs'
 * max_duration_seconds, 600 by default); a day leaves room for any setting, and keeps the value far inside PostgreSQL's integer column
 * (a duration of 3e9 overflowed it and answered 500).
 */
export const maxCallSeconds = 24 * 60 * 60;
/** How far from the reference time (the event's, or now) a provider's timestamp may lie and still be believed. */
const maxAgeMs = 366 * 24 * 60 * 60 * 1000;
const maxAheadMs = 24 * 60 * 60 * 1000;

/** Told about each provider value that was out of range and replaced (the webhook route logs a warning). */
export type OnAdjusted = (field: string, sent: unknown, kept: unknown) => void;

/**
 * A provider's unix-seconds timestamp as a Date, when it lies within a year before `reference` and a day
 * after; null otherwise (1e300 or -1e20 made an Invalid Date, and `toISOString` threw a 500).
 */
export function saneUnixSeconds(value: unknown, reference: Date): Date | null {
  const seconds = finiteNumber(value);
  if (seconds === null) return null;
  const ms = seconds * 1000;
  return ms >= reference.getTime() - maxAgeMs && ms <= reference.getTime() + maxAheadMs ? new Date(ms) : null;
}

/** Text from the provider without U+0000, which PostgreSQL cannot store (SQLite could: the same on both). */
export function withoutNul(text: string, field: string, onAdjusted?: OnAdjusted): string {
  if (!text.includes('\u0000')) return text;
  const kept = text.replace(/\u0000/g, '');
  onAdjusted?.(field, 'text with U+0000', 'the same text without it');
  return kept;
}

/** A provider's epoch-milliseconds timestamp (Retell's) as a Date, by the rule of `saneUnixSeconds`. */
export function saneEpochMs(value: unknown, reference: Date): Date | null {
  const ms = finiteNumber(value);
  return ms === null ? null : saneUnixSeconds(ms / 1000, reference);
}

/** A provider's ISO 8601 timestamp (Vapi's) as a Date, by the rule of `saneUnixSeconds`. */
export function saneIsoTime(value: unknown, reference: Date): Date | null {
  if (typeof value !== 'string' || value.length > 40) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? saneUnixSeconds(ms / 1000, reference) : null;
}

/** A duration in seconds as stored: rounded and clamped to 0..maxCallSeconds, a change reported. */
export function saneDurationSeconds(sent: number | null, field: string, onAdjusted?: OnAdjusted): number {
  const duration = Math.min(maxCallSeconds, Math.max(0, Math.round(sent ?? 0)));
  if (sent !== null && duration !== Math.round(sent)) onAdjusted?.(field, sent, duration);
  return duration;
}

export { finiteNumber };
