/**
 * A batch's calling window and retry policy in words, as `callgate batches show` and the portal's batch
 * page say them (one wording for both).
 */
import type { Batch } from './batches.schemas.js';
import { recipientZone, weekdays, type Weekday } from './calling-window.js';

/** `mon–fri, sun`: runs of three or more days in a row as a range. */
function daysInWords(days: readonly Weekday[]): string {
  if (days.length === weekdays.length) return 'every day';
  const indexes = weekdays.flatMap((day, index) => (days.includes(day) ? [index] : []));
  const runs: number[][] = [];
  for (const index of indexes) {
    const run = runs.at(-1);
    if (run && run.at(-1) === index - 1) run.push(index);
    else runs.push([index]);
  }
  return runs
    .flatMap((run) => (run.length >= 3 ? [`${weekdays[run[0]!]}–${weekdays[run.at(-1)!]}`] : run.map((index) => weekdays[index]!)))
    .join(', ');
}

export function callingWindowInWords(window: Batch['calling_window']): string {
  if (window === null) return 'none: recipients are dialed at any hour';
  const zone =
    window.time_zone === recipientZone
      ? `in each recipient's time zones, from its number (${window.fallback_time_zone} for a number of no known zone)`
      : `in ${window.time_zone}`;
  return `${window.start}–${window.end}, ${daysInWords(window.days)}, ${zone}`;
}

const reasonWords = { busy: 'busy', no_answer: 'unanswered', voicemail: 'voicemail' } as const;

function minutesInWords(minutes: number): string {
  if (minutes % 60 !== 0) return minutes === 1 ? '1 minute' : `${minutes} minutes`;
  const hours = minutes / 60;
  return hours === 1 ? '1 hour' : `${hours} hours`;
}

export function retryInWords(retry: Batch['retry']): string {
  if (retry === null || retry.max_attempts <= 1) return 'none: one dial per recipient';
  const reasons = retry.on.map((reason) => reasonWords[reason]).join(' or ');
  return `a ${reasons} recipient is dialed again ${minutesInWords(retry.delay_minutes)} later, up to ${retry.max_attempts} dials in all`;
}
