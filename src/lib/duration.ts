/** Durations in settings are written with a unit: `500ms`, `5s`, `15m`, `2h`, `1d`. */
const units: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds of a duration such as `15m`; throws with a readable message otherwise. */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) throw new Error(`"${text.trim()}" is not a duration such as 500ms, 5s, 15m or 2h`);
  return Math.round(Number(match[1]) * units[match[2]!]!);
}

/**
 * Milliseconds of each duration of a comma-separated list such as `5s,5m,30m,2h` (empty entries are
 * skipped); throws with a readable message on a bad entry, or when there is none (`the <name> is empty`).
 */
export function parseDurationList(text: string, name = 'list'): number[] {
  const parts = text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
  if (parts.length === 0) throw new Error(`the ${name} is empty`);
  return parts.map(parseDuration);
}

const spokenUnits: readonly (readonly [ms: number, name: string])[] = [
  [units.d!, 'day'],
  [units.h!, 'hour'],
  [units.m!, 'minute'],
  [units.s!, 'second'],
];

/** A duration as people say it, in its largest whole unit: `5 days`, `1 hour`, `12 minutes`, `0 seconds`. */
export function spokenDuration(ms: number): string {
  const length = Math.abs(ms);
  const [unitMs, name] = spokenUnits.find(([unitMs]) => length >= unitMs) ?? spokenUnits.at(-1)!;
  const count = Math.floor(length / unitMs);
  return `${count} ${name}${count === 1 ? '' : 's'}`;
}

/** How far `iso` is from `now`: `5 days ago`, `in 12 minutes` (`now` within the second). */
export function relativeTime(iso: string, now: Date): string {
  const ms = Date.parse(iso) - now.getTime();
  if (Math.abs(ms) < units.s!) return 'now';
  return ms < 0 ? `${spokenDuration(ms)} ago` : `in ${spokenDuration(ms)}`;
}
