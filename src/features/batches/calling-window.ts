/**
 * A batch's calling window: the hours (and days) when its recipients may be called, in a named time zone or
 * in each recipient's own zones (from its number). Pure functions: the service checks a window and places a
 * recipient's next attempt with them, the dialer asks whether a claimed recipient may be dialed now.
 *
 * Local times are turned into instants by Luxon, which reads the runtime's tz data: a day of a change of
 * daylight-saving time has 23 or 25 hours, an opening in the hour that a spring change skips moves on by
 * that hour, and zones half an hour off UTC need nothing special.
 */
import { DateTime } from 'luxon';
import { isTimeZone, phoneTimeZones, timeZoneName } from '../../lib/phone-numbers.js';

export const weekdays = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof weekdays)[number];
/** `time_zone` that means: each recipient's own zones, from its number. */
export const recipientZone = 'recipient';

/** A window as the API takes it (the schema has checked its shape) and as the batch shows it (`days` filled in). */
export interface CallingWindow {
  start: string;
  end: string;
  days?: Weekday[];
  time_zone: string;
  fallback_time_zone?: string;
}

const hhmm = /^([01]\d|2[0-3]):([0-5]\d)$/;
/** How far ahead an opening is looked for: two weeks covers every pattern of days (and a change of time). */
const horizonDays = 15;
const dayMs = 24 * 3600_000;

/** The first fault of a window, with the field it is in, or the window with its defaults filled in. */
export function checkCallingWindow(input: CallingWindow): { window: CallingWindow } | { param: string; message: string } {
  const at = (field: string) => `calling_window.${field}`;
  for (const field of ['start', 'end'] as const) {
    if (!hhmm.test(input[field])) {
      return { param: at(field), message: `${at(field)} must be a time of day as HH:MM (00:00 to 23:59), such as 09:00.` };
    }
  }
  if (input.start >= input.end) {
    return {
      param: at('end'),
      message: `${at('end')} must come after ${at('start')} (${input.start}); a window cannot run across midnight.`,
    };
  }
  const days = input.days ?? [...weekdays];
  const repeated = days.find((day, index) => days.indexOf(day) !== index);
  if (repeated) return { param: at('days'), message: `${at('days')} names ${repeated} twice; name each day once.` };
  const timeZone = input.time_zone === recipientZone ? recipientZone : timeZoneName(input.time_zone);
  if (timeZone === undefined) {
    return {
      param: at('time_zone'),
      message: `${at('time_zone')} must be an IANA time zone such as America/New_York, or "recipient" for each recipient's own zones.`,
    };
  }
  // null: a fallback was given that names no zone.
  const fallback = input.fallback_time_zone === undefined ? undefined : (timeZoneName(input.fallback_time_zone) ?? null);
  if (timeZone === recipientZone) {
    if (fallback === undefined) {
      return {
        param: at('fallback_time_zone'),
        message: `${at('fallback_time_zone')} is required with time_zone "recipient": the zone of a number whose zone is not known.`,
      };
    }
    if (fallback === null) {
      return {
        param: at('fallback_time_zone'),
        message: `${at('fallback_time_zone')} must be an IANA time zone such as America/New_York.`,
      };
    }
  } else if (fallback !== undefined) {
    return { param: at('fallback_time_zone'), message: `${at('fallback_time_zone')} is only used with time_zone "recipient".` };
  }
  // Days in the week's order, whatever the order given.
  const window: CallingWindow = {
    start: input.start,
    end: input.end,
    days: weekdays.filter((day) => days.includes(day)),
    time_zone: timeZone,
  };
  if (fallback) window.fallback_time_zone = fallback;
  return { window };
}

/**
 * The zones whose window a recipient must be inside: the window's zone, or with "recipient" the zones of its
 * number (every one), or the fallback zone when its number has none the runtime knows.
 */
export function windowZones(window: CallingWindow, to: string): string[] {
  if (window.time_zone !== recipientZone) return [window.time_zone];
  const zones = [...new Set(phoneTimeZones(to).filter(isTimeZone))];
  return zones.length > 0 ? zones : [window.fallback_time_zone!];
}

type Interval = readonly [start: number, end: number];

/**
 * When a window ends on a day, as an instant. An end the clock skips (02:45 on a spring-forward night) is moved
 * forward by Luxon to a time after the window (03:45): the window ends instead where the skipped hour begins,
 * the instant of the change, found between the shifted time less the skip (on the old offset) and itself.
 */
function endOfDay(end: DateTime, minuteOfDay: number): number {
  const skipped = (end.hour * 60 + end.minute - minuteOfDay + 1440) % 1440;
  let after = end.toMillis();
  if (skipped === 0) return after;
  let before = after - skipped * 60_000;
  while (after - before > 60_000) {
    const middle = before + Math.floor((after - before) / 120_000) * 60_000;
    if (DateTime.fromMillis(middle, { zone: end.zone }).offset === end.offset) after = middle;
    else before = middle;
  }
  return after;
}

/** The window's open intervals in one zone that end after `from`, up to the horizon, in order. */
function openIntervals(window: CallingWindow, zone: string, from: number): Interval[] {
  const [startHour, startMinute] = window.start.split(':').map(Number) as [number, number];
  const [endHour, endMinute] = window.end.split(':').map(Number) as [number, number];
  // Luxon numbers the days of the week from 1, Monday, to 7, Sunday: the order of `weekdays`.
  const open = new Set((window.days ?? weekdays).map((day) => weekdays.indexOf(day) + 1));
  const intervals: Interval[] = [];
  // From the day before: that day's window may still be open at `from` in a zone behind.
  let day = DateTime.fromMillis(from, { zone }).startOf('day').minus({ days: 1 });
  const until = from + horizonDays * dayMs;
  while (day.toMillis() < until) {
    if (open.has(day.weekday)) {
      const start = day.set({ hour: startHour, minute: startMinute }).toMillis();
      const end = endOfDay(day.set({ hour: endHour, minute: endMinute }), endHour * 60 + endMinute);
      if (end > from && end > start) intervals.push([start, end]);
    }
    day = day.plus({ days: 1 });
  }
  return intervals;
}

function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const both: Interval[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const start = Math.max(a[i]![0], b[j]![0]);
    const end = Math.min(a[i]![1], b[j]![1]);
    if (start < end) both.push([start, end]);
    if (a[i]![1] < b[j]![1]) i++;
    else j++;
  }
  return both;
}

/**
 * The first instant from `from` on when the window is open in every one of `zones`: `from` itself while it
 * is open, or null when it does not open in all of them at once within two weeks (zones too far apart for
 * its hours).
 */
export function nextOpening(window: CallingWindow, zones: readonly string[], from: Date): Date | null {
  const at = from.getTime();
  const common = zones.map((zone) => openIntervals(window, zone, at)).reduce(intersect);
  const first = common[0];
  return first ? new Date(Math.max(first[0], at)) : null;
}

export function isOpen(window: CallingWindow, zones: readonly string[], at: Date): boolean {
  return nextOpening(window, zones, at)?.getTime() === at.getTime();
}
