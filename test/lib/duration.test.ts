/** Durations as doctor says them: in their largest whole unit, before or after now. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { relativeTime, spokenDuration } from '../../src/lib/duration.js';

it('says a duration in its largest whole unit, singular for one', () => {
  assert.equal(spokenDuration(5 * 86_400_000 + 3_600_000), '5 days');
  assert.equal(spokenDuration(86_400_000), '1 day');
  assert.equal(spokenDuration(86_400_000 - 1), '23 hours');
  assert.equal(spokenDuration(61_000), '1 minute');
  assert.equal(spokenDuration(59_999), '59 seconds');
  assert.equal(spokenDuration(400), '0 seconds');
});

it('says how far a time is from now, either way', () => {
  const now = new Date('2026-01-10T12:00:00.000Z');
  assert.equal(relativeTime('2026-01-05T11:00:00.000Z', now), '5 days ago');
  assert.equal(relativeTime('2026-01-10T12:45:00.000Z', now), 'in 45 minutes');
  assert.equal(relativeTime('2026-01-10T12:00:00.500Z', now), 'now');
});
