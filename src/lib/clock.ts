/** Time comes through this interface so that tests can move it (24-hour idempotency expiry, leases). */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; for tests. */
export class ManualClock implements Clock {
  private current: number;

  constructor(start: Date | number = Date.now()) {
    this.current = typeof start === 'number' ? start : start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(ms: number): void {
    this.current += ms;
  }

  set(to: Date | number): void {
    this.current = typeof to === 'number' ? to : to.getTime();
  }
}

/** ISO 8601 UTC with milliseconds, the one timestamp format of the API and the database. */
export function isoTimestamp(date: Date): string {
  return date.toISOString();
}

export function addMs(date: Date, ms: number): Date {
  return new Date(date.getTime() + ms);
}

const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:[Zz]|([+-])(\d{2}):?(\d{2}))$/;

/**
 * An ISO 8601 date and time with its UTC offset (`2026-11-24T09:00:00Z`, `…+01:00`), or null for anything
 * else. Stricter than Date.parse, which takes 30 February for 2 March and guesses a zone when none is given.
 */
export function parseIsoDateTime(text: string): Date | null {
  const match = isoDateTime.exec(text);
  if (!match) return null;
  const [, year, month, day, hour, minute, second = '0', fraction = '0', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number) as [number, number, number, number, number, number];
  const daysInMonth = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  if (
    mo < 1 ||
    mo > 12 ||
    d < 1 ||
    d > daysInMonth ||
    h > 23 ||
    mi > 59 ||
    s > 59 ||
    Number(offsetHours) > 23 ||
    Number(offsetMinutes) > 59
  ) {
    return null;
  }
  const offsetMs = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const ms = Math.floor(Number(`0.${fraction}`) * 1000);
  return new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms) - offsetMs);
}
