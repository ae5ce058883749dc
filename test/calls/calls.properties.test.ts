/**
 * Property-based tests: generated bodies against the real app (SQLite through inject), and the pure helpers
 * the API leans on (the canonical JSON fingerprint behind idempotency, the Idempotency-Key rule).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { isValidIdempotencyKey } from '../../src/features/idempotency/idempotency.service.js';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { inexactNumber } from '../../src/http/json-body.js';
import { bodyFingerprint, canonicalJson } from '../../src/lib/json.js';
import { jsonBytes } from '../support/api-errors.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const e164 = /^\+[1-9]\d{6,14}$/;
const metadataMaxBytes = 5 * 1024;
const numRuns = 150;

type MetadataValue = string | number | boolean | null;

/** E.164 numbers: a digit 1-9, then 6 to 14 digits; never the simulator's number that refuses calls. */
const e164Number = fc
  .tuple(fc.integer({ min: 1, max: 9 }), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 6, maxLength: 14 }))
  .map(([first, rest]) => `+${first}${rest}`)
  .filter((to) => to !== simulatorMagicNumbers.refused);

/** Keys of at most 64 characters (code points), any Unicode; `__proto__` is refused by the JSON parser. */
// U+0000 is refused in any text (PostgreSQL cannot store it; calls.bad-input.test.ts has those cases).
const withoutNul = (text: string) => !text.includes('\u0000');
const metadataKey = fc.string({ unit: 'binary', maxLength: 64 }).filter((key) => key !== '__proto__' && withoutNul(key));

const metadataValue: fc.Arbitrary<MetadataValue> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }).filter(withoutNul),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
);

/** Valid metadata: at most 5,120 bytes of JSON. */
const validMetadata = fc
  .dictionary(metadataKey, metadataValue, { maxKeys: 25 })
  .filter((metadata) => jsonBytes(metadata) <= metadataMaxBytes);

describe('POST /v1/calls properties [sqlite]', () => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp('sqlite');
  });
  after(async () => t.close());

  it('any valid body is 201, echoes agent_id and to, and stores the metadata as sent', async () => {
    await fc.assert(
      fc.asyncProperty(e164Number, fc.option(validMetadata, { nil: undefined }), async (to, metadata) => {
        const body = metadata === undefined ? { agent_id: t.seed.agentId, to } : { agent_id: t.seed.agentId, to, metadata };
        const res = await t.createCall(body);
        assert.equal(res.statusCode, 201, res.body);
        const created = res.json();
        assert.equal(created.to, to);
        assert.equal(created.agent_id, t.seed.agentId);
        assert.equal(created.status, 'initiated');
        const row = await t.services.db.selectFrom('calls').select('metadata').where('id', '=', created.id).executeTakeFirstOrThrow();
        // JSON is the contract: -0 arrives as 0, everything else exactly as sent.
        assert.deepEqual(JSON.parse(row.metadata ?? 'null'), metadata === undefined ? null : JSON.parse(JSON.stringify(metadata)));
      }),
      { numRuns },
    );
  });

  it('a string `to` is accepted exactly when it matches ^\\+[1-9]\\d{6,14}$', async () => {
    const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
    const candidate = fc
      .oneof(
        e164Number,
        // Near misses: an optional +, then 0 to 17 digits.
        fc.tuple(fc.constantFrom('', '+', '++'), digits(0, 17)).map(([plus, rest]) => plus + rest),
        // A valid number with one character inserted somewhere.
        fc
          .tuple(e164Number, fc.nat(), fc.constantFrom(' ', '-', '(', 'a', '\n', '\u0000', '٣', '１', '+', '0'))
          .map(([to, at, inserted]) => to.slice(0, at % (to.length + 1)) + inserted + to.slice(at % (to.length + 1))),
        fc.string({ unit: 'binary', maxLength: 20 }),
      )
      .filter((to) => to !== simulatorMagicNumbers.refused);
    await fc.assert(
      fc.asyncProperty(candidate, async (to) => {
        const res = await t.createCall({ agent_id: t.seed.agentId, to });
        if (e164.test(to)) {
          assert.equal(res.statusCode, 201, `${JSON.stringify(to)}: ${res.body}`);
        } else {
          assert.equal(res.statusCode, 400, `${JSON.stringify(to)}: ${res.body}`);
          assert.equal(res.json().error, 'invalid_request');
          assert.equal(res.json().param, 'to');
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a non-string `to` is never coerced: 400 with param to', async () => {
    // No `__proto__` key: the parser refuses such a body before any field is looked at (no param to name).
    const nonString = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(e164Number, { minLength: 1, maxLength: 2 }),
      fc.dictionary(
        fc.string().filter((key) => key !== '__proto__'),
        e164Number,
      ),
    );
    await fc.assert(
      fc.asyncProperty(nonString, async (to) => {
        const res = await t.createCall({ agent_id: t.seed.agentId, to });
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().param, 'to');
      }),
      { numRuns: 100 },
    );
  });

  it('metadata with one key of more than 64 characters is 400 with param metadata', async () => {
    const longKey = fc.string({ unit: 'binary', minLength: 65, maxLength: 120 }).filter((key) => key !== '__proto__');
    await fc.assert(
      fc.asyncProperty(validMetadata, longKey, metadataValue, async (metadata, key, value) => {
        const res = await t.createCall({ agent_id: t.seed.agentId, to: '+14155550123', metadata: { ...metadata, [key]: value } });
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error, 'invalid_request');
        assert.equal(res.json().param, 'metadata');
      }),
      { numRuns },
    );
  });

  it('metadata near 5 KB is accepted exactly when its JSON is at most 5,120 UTF-8 bytes', async () => {
    // Characters of 1 to 4 UTF-8 bytes, and ones that JSON escapes to 2 or 6 bytes.
    const char = fc.constantFrom('a', 'é', '€', '😀', '"', '\\', '\n', '\u0001');
    const nearLimit = fc
      .tuple(fc.string({ unit: char, minLength: 1_250, maxLength: 2_700 }), fc.string({ unit: char, maxLength: 64 }))
      .map(([value, key]) => ({ [key]: value }));
    await fc.assert(
      fc.asyncProperty(nearLimit, async (metadata) => {
        const res = await t.createCall({ agent_id: t.seed.agentId, to: '+14155550123', metadata });
        if (jsonBytes(metadata) <= metadataMaxBytes) {
          assert.equal(res.statusCode, 201, `${jsonBytes(metadata)} bytes: ${res.body}`);
        } else {
          assert.equal(res.statusCode, 400, `${jsonBytes(metadata)} bytes: ${res.body}`);
          assert.equal(res.json().param, 'metadata');
        }
      }),
      { numRuns: 100 },
    );
  });
});

/** A deterministic shuffle (mulberry32), so fast-check can shrink and replay a permutation from its seed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/** The same JSON value with the keys of every object inserted in another order. */
function permuteKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => permuteKeys(item, seed + index + 1));
  if (value === null || typeof value !== 'object') return value;
  const result: Record<string, unknown> = {};
  for (const key of shuffled(Object.keys(value), seed)) {
    Object.defineProperty(result, key, {
      value: permuteKeys((value as Record<string, unknown>)[key], seed ^ key.length),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return result;
}

/** Equality of JSON values as JSON sees them (so -0 is 0), ignoring key order. */
function sameJson(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
    return true;
  } catch {
    return false;
  }
}

describe('bodyFingerprint (canonical JSON)', () => {
  it('is equal for every key order, at every depth', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.integer(), (value, seed) => {
        const permuted = permuteKeys(value, seed);
        assert.ok(sameJson(value, permuted));
        assert.equal(canonicalJson(permuted), canonicalJson(value));
        assert.equal(bodyFingerprint(permuted), bodyFingerprint(value));
      }),
      { numRuns: 200 },
    );
  });

  it('is equal for two values exactly when they are the same JSON', () => {
    // Small values from a small alphabet, so that equal pairs occur too.
    const small = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.constantFrom(null, true, false, 0, 1, -1, 0.5, '', 'a', 'b'),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(
      fc.property(small, small, (a, b) => {
        assert.equal(bodyFingerprint(a) === bodyFingerprint(b), sameJson(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      }),
      { numRuns: 200 },
    );
  });

  it('differs when any one value of a body changes', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue(), { minKeys: 1, maxKeys: 6 }),
        fc.nat(),
        fc.jsonValue(),
        (body, pick, replacement) => {
          const keys = Object.keys(body);
          const key = keys[pick % keys.length] as string;
          fc.pre(!sameJson(body[key], replacement));
          const changed = { ...body };
          Object.defineProperty(changed, key, { value: replacement, enumerable: true, writable: true, configurable: true });
          assert.notEqual(bodyFingerprint(changed), bodyFingerprint(body));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is a SHA-256 in hex', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        assert.match(bodyFingerprint(value), /^[0-9a-f]{64}$/);
      }),
      { numRuns: 50 },
    );
  });
});

describe('isValidIdempotencyKey', () => {
  /** The spec's rule written without a regular expression. */
  const oracle = (key: string) =>
    key.length >= 1 &&
    key.length <= 255 &&
    [...key].every((char) => char.length === 1 && char.charCodeAt(0) >= 0x21 && char.charCodeAt(0) <= 0x7e);
  const printable = fc.integer({ min: 0x21, max: 0x7e }).map((code) => String.fromCharCode(code));

  it('accepts every string of 1 to 255 characters from ! to ~', () => {
    fc.assert(
      fc.property(fc.string({ unit: printable, minLength: 1, maxLength: 255 }), (key) => {
        assert.equal(isValidIdempotencyKey(key), true, key);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses the empty key and any key of 256 or more characters', () => {
    assert.equal(isValidIdempotencyKey(''), false);
    assert.equal(isValidIdempotencyKey('k'.repeat(255)), true);
    assert.equal(isValidIdempotencyKey('k'.repeat(256)), false);
    fc.assert(
      fc.property(fc.string({ unit: printable, minLength: 256, maxLength: 600 }), (key) => {
        assert.equal(isValidIdempotencyKey(key), false);
      }),
      { numRuns: 100 },
    );
  });

  it('refuses a valid key with any one character outside ! to ~ put anywhere', () => {
    const outside = fc.oneof(
      fc.integer({ min: 0, max: 0x20 }),
      fc.constant(0x7f),
      fc.integer({ min: 0x80, max: 0x10ffff }).filter((code) => code < 0xd800 || code > 0xdfff),
    );
    fc.assert(
      fc.property(fc.string({ unit: printable, maxLength: 254 }), fc.nat(), outside, (key, at, code) => {
        const index = at % (key.length + 1);
        const bad = key.slice(0, index) + String.fromCodePoint(code) + key.slice(index);
        assert.equal(isValidIdempotencyKey(bad), false, JSON.stringify(bad));
      }),
      { numRuns: 200 },
    );
  });

  it('agrees with the rule on arbitrary strings', () => {
    const anyKey = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.string({ unit: 'binary-ascii', maxLength: 300 }),
      fc.string({ unit: printable, maxLength: 300 }),
      fc.string({ unit: fc.constantFrom('a', ' ', '~', '\u007f', 'é', '\t', '!'), minLength: 250, maxLength: 260 }),
    );
    fc.assert(
      fc.property(anyKey, (key) => {
        assert.equal(isValidIdempotencyKey(key), oracle(key), JSON.stringify(key));
      }),
      { numRuns: 200 },
    );
  });
});

describe('inexactNumber (numbers JSON cannot keep as written)', () => {
  it('never refuses a number as JSON.stringify writes it: every double and every safe integer reads back the same', () => {
    const finite = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.maxSafeInteger(), fc.integer());
    fc.assert(
      fc.property(fc.dictionary(fc.string({ maxLength: 8 }), finite), (metadata) => inexactNumber(JSON.stringify({ metadata })) === null),
    );
  });

  it('refuses an integer literal whose double reads back different, naming where it is among other values', () => {
    // The integer a double's shortest form stands for (1e+30 is 10^30 exactly).
    const decimalOf = (text: string): bigint => {
      const [mantissa = '', exponent = '0'] = text.split(/e/i);
      const [whole = '', fraction = ''] = mantissa.split('.');
      return BigInt(whole + fraction) * 10n ** BigInt(Number(exponent) - fraction.length);
    };
    const tooBig = fc.bigInt({ min: 2n ** 53n + 1n, max: 10n ** 30n }).filter((n) => decimalOf(String(Number(n))) !== n);
    fc.assert(
      fc.property(tooBig, fc.boolean(), fc.string({ maxLength: 8 }), (n, negative, note) => {
        const literal = `${negative ? '-' : ''}${n}`;
        const found = inexactNumber(`{"metadata":{"note":${JSON.stringify(note)},"n":${literal},"m":1}}`);
        return found?.token === literal && found.path === 'metadata.n' && found.readBack === String(Number(literal));
      }),
    );
  });
});
