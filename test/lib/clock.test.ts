/** Timestamps (src/lib/clock.ts); no database needed. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { isoTimestamp } from '../../src/lib/clock.js';

it('writes every timestamp exactly as toISOString does, within a minute, across minutes and outside years 0 to 9999', () => {
  const edges = [0, -1, 1, 9, 10, 99, 100, 999, 1000, 9999, 10_000, 59_999, 60_000, -60_000, -60_001];
  const bases = [
    0,
    Date.UTC(2026, 10, 24, 22, 52),
    Date.UTC(9999, 11, 31, 23, 59),
    Date.UTC(10_000, 0, 1),
    Date.UTC(-1, 0, 1),
    8.64e15 - 60_000,
  ];
  const instants = bases.flatMap((base) => edges.map((edge) => base + edge));
  // Random instants over ±100 years, each followed by a few in its minute and the next, as a run writes them.
  for (let i = 0; i < 5000; i++) {
    const at = Math.floor((Math.random() * 2 - 1) * 3.2e12);
    instants.push(at, at + 1, at + 37, at + 999, at + 1000, at + 59_000, at + 61_000);
  }
  for (const at of instants) {
    const date = new Date(at);
    if (Number.isNaN(date.getTime())) continue;
    assert.equal(isoTimestamp(date), date.toISOString(), String(at));
  }
});

it('refuses an invalid date as toISOString does', () => {
  assert.throws(() => isoTimestamp(new Date(Number.NaN)), RangeError);
});
