/** Ids and random tokens (src/lib/ids.ts); no database needed. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { newId, randomHex } from '../../src/lib/ids.js';

it('makes ids with their prefix, 26 base32 digits, sorted by time', () => {
  const first = newId('call', Date.UTC(2026, 0, 1));
  const second = newId('call', Date.UTC(2026, 0, 2));
  assert.match(first, /^call_[0-9a-hjkmnp-tv-z]{26}$/);
  assert.ok(first < second);
});

it('gives random hex tokens of the asked length that never repeat, across refills of the pool', () => {
  const seen = new Set<string>();
  // Far more bytes than one pool holds, interleaved with ids that draw from the same pool.
  for (let i = 0; i < 2000; i++) {
    const token = randomHex(12);
    assert.match(token, /^[0-9a-f]{24}$/);
    seen.add(token);
    newId('request');
  }
  assert.equal(seen.size, 2000);
  assert.match(randomHex(64), /^[0-9a-f]{128}$/);
  assert.throws(() => randomHex(0), RangeError);
  assert.throws(() => randomHex(65), RangeError);
});
