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

it('orders the ids made in one millisecond as they were made, each its own, with ids of other milliseconds between them', () => {
  const at = Date.UTC(2026, 0, 3);
  const made = Array.from({ length: 1000 }, (_, i) => {
    // An injected clock held still beside the system clock: ids of other milliseconds come in between.
    newId('request');
    newId('event', at - 1 - i);
    newId('event', at + 1 + i);
    return newId(i % 2 === 0 ? 'batch' : 'call', at).replace(/^[a-z]+_/, '');
  });
  assert.deepEqual([...made].sort(), made);
  assert.equal(new Set(made).size, made.length);
  // Another millisecond draws new random bits: nothing to guess from the last id.
  const next = newId('call', at + 5000).slice(-16);
  assert.notEqual(next, made.at(-1)!.slice(-16));
});

it('gives random hex tokens of the asked length that never repeat, across refills of the pool', () => {
  const seen = new Set<string>();
  // Far more bytes than one pool holds, interleaved with ids that draw from the same pool.
  for (let i = 0; i < 2000; i++) {
    const token = randomHex(12);
    assert.match(token, /^[0-9a-f]{24}$/);
    seen.add(token);
    newId('request', i);
  }
  assert.equal(seen.size, 2000);
  assert.match(randomHex(64), /^[0-9a-f]{128}$/);
  assert.throws(() => randomHex(0), RangeError);
  assert.throws(() => randomHex(65), RangeError);
});
