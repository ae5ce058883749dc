/**
 * The validation rules of spec 2.1 and 8 for POST /v1/calls, boundary by boundary, on both databases: what
 * is just inside a limit is accepted (201), what is just outside is refused with 400 `invalid_request` and
 * the field at fault in `param`, and nothing refused is ever stored.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorShape, jsonBytes } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { appFor, callBody, countCalls, type TestApp } from '../support/test-app.js';

const metadataMaxBytes = 5 * 1024;

/** `base` plus a `pad` key whose value makes the metadata exactly `bytes` bytes of JSON. */
function metadataOfBytes(bytes: number, base: Record<string, unknown> = {}): Record<string, unknown> {
  const padding = bytes - jsonBytes({ ...base, pad: '' });
  assert.ok(padding >= 0, `base metadata is already larger than ${bytes} bytes`);
  const metadata = { ...base, pad: 'x'.repeat(padding) };
  assert.equal(jsonBytes(metadata), bytes);
  return metadata;
}

/** What a request is expected to get from the app `t`: a 201, or a refusal that stored nothing. */
function expectations(t: TestApp) {
  async function expectCreated(body: unknown): Promise<LightMyRequestResponse> {
    const res = await t.createCall(body);
    assert.equal(res.statusCode, 201, `expected 201, got ${res.statusCode}: ${res.body}`);
    assert.match(String(res.headers['x-request-id']), /^req_/);
    return res;
  }

  /** Refused with the given status, code and param (undefined: no param at all), and nothing stored. */
  async function expectRefused(
    body: unknown,
    expected: { status?: number; error?: string; param: string | RegExp | undefined },
  ): Promise<Record<string, unknown>> {
    const callsBefore = await countCalls(t.services);
    const res = await t.createCall(body);
    const error = assertErrorShape(res, expected.status ?? 400, expected.error ?? 'invalid_request');
    if (expected.param === undefined) assert.equal('param' in error, false, `unexpected param ${String(error.param)}`);
    else if (typeof expected.param === 'string') assert.equal(error.param, expected.param);
    else assert.match(String(error.param), expected.param);
    assert.equal(await countCalls(t.services), callsBefore, 'a refused request stored a call');
    return error;
  }
  return { expectCreated, expectRefused };
}

await forEachDialect('POST /v1/calls validation: to and agent_id', (dialect) => {
  const t = appFor(dialect);
  const { expectCreated, expectRefused } = expectations(t);

  describe('to', () => {
    it('accepts 7 digits in all (the country digit and 6 more), the shortest E.164 number allowed', async () => {
      const res = await expectCreated(callBody(t, { to: '+1234567' }));
      assert.equal(res.json().to, '+1234567');
    });

    it('refuses 6 digits in all', async () => {
      await expectRefused(callBody(t, { to: '+123456' }), { param: 'to' });
    });

    it('accepts 15 digits in all, the longest allowed', async () => {
      const res = await expectCreated(callBody(t, { to: '+123456789012345' }));
      assert.equal(res.json().to, '+123456789012345');
    });

    it('refuses 16 digits in all', async () => {
      await expectRefused(callBody(t, { to: '+1234567890123456' }), { param: 'to' });
    });

    it('refuses a leading 0 after the +', async () => {
      await expectRefused(callBody(t, { to: '+04155550123' }), { param: 'to' });
    });

    it('refuses a number without the +', async () => {
      await expectRefused(callBody(t, { to: '14155550123' }), { param: 'to' });
    });

    it('refuses spaces, separators, white space around the number and look-alike digits', async () => {
      for (const to of [
        '+1 415 555 0123',
        '+1-415-555-0123',
        '+1(415)5550123',
        '+1.415.555.0123',
        ' +14155550123',
        '+14155550123 ',
        '+14155550123\n',
        '\t+14155550123',
        '++14155550123',
        '+',
        '',
        '+1415555O123', // a letter O
        '+１４１５５５５０１２３', // full-width digits
        '+١٤١٥٥٥٥٠١٢٣', // Arabic-Indic digits
        '+14155550123\u0000',
      ]) {
        await expectRefused(callBody(t, { to }), { param: 'to' });
      }
    });

    it('never coerces a non-string: a number, a one-element array, null, a boolean or an object', async () => {
      for (const to of [14155550123, ['+14155550123'], null, true, { number: '+14155550123' }]) {
        const error = await expectRefused(callBody(t, { to }), { param: 'to' });
        assert.match(String(error.message), /to/);
      }
    });

    it('a missing to is named in param', async () => {
      const error = await expectRefused({ agent_id: t.seed.agentId }, { param: 'to' });
      assert.match(String(error.message), /to/);
    });
  });

  describe('agent_id', () => {
    it('a missing agent_id is named in param', async () => {
      const error = await expectRefused({ to: '+14155550123' }, { param: 'agent_id' });
      assert.match(String(error.message), /agent_id/);
    });

    it('refuses a non-string agent_id without coercing it', async () => {
      for (const agentId of [42, null, true, { id: 'agent_test_reminders' }, ['agent_test_reminders']]) {
        await expectRefused(callBody(t, { agent_id: agentId }), { param: 'agent_id' });
      }
    });

    it('an unknown agent is 403 agent_not_found', async () => {
      const error = await expectRefused(callBody(t, { agent_id: 'agent_does_not_exist' }), {
        status: 403,
        error: 'agent_not_found',
        param: 'agent_id',
      });
      assert.match(String(error.message), /agent_does_not_exist/);
    });

    it('any string is a well-typed agent_id: empty, very long, odd characters are all 403 agent_not_found, never 500', async () => {
      for (const agentId of [
        '',
        ' ',
        `agent_${'x'.repeat(20_000)}`,
        "agent_'; drop table calls; --",
        'agent_%_*',
        'AGENT_TEST_REMINDERS',
        ' agent_test_reminders',
        'agent_😀',
      ]) {
        await expectRefused(callBody(t, { agent_id: agentId }), { status: 403, error: 'agent_not_found', param: 'agent_id' });
      }
    });

    it('an agent_id with a NUL character or a lone surrogate is 400 invalid_request naming it, on both databases (no agent can have one)', async () => {
      for (const agentId of ['agent_\u0000', '\u0000', 'agent_test_reminders\u0000']) {
        await expectRefused(callBody(t, { agent_id: agentId }), { status: 400, error: 'invalid_request', param: 'agent_id' });
      }
      // Nor a lone surrogate, which no database would store as sent.
      const lone = await expectRefused(callBody(t, { agent_id: 'agent_\ud800' }), {
        status: 400,
        error: 'invalid_request',
        param: 'agent_id',
      });
      assert.match(String(lone.message), /lone surrogate/);
    });

    it('an agent of another account is 403 agent_not_found, exactly like one that does not exist', async () => {
      const other = await t.newAccount({ agentId: 'agent_only_in_other_account' });
      await expectRefused(callBody(t, { agent_id: other.agentId }), { status: 403, error: 'agent_not_found', param: 'agent_id' });
      // The other account's own key may use it.
      const res = await t.createCall(callBody(t, { agent_id: other.agentId }), { token: other.token });
      assert.equal(res.statusCode, 201, res.body);
    });

    it('two accounts with the same agent_id each reach their own agent', async () => {
      const other = await t.newAccount({ agentId: t.seed.agentId });
      const res = await t.createCall(callBody(t), { token: other.token });
      assert.equal(res.statusCode, 201, res.body);
      const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow();
      assert.equal(row.account_id, other.accountId);
    });
  });
});

await forEachDialect('POST /v1/calls validation: metadata and the body as a whole', (dialect) => {
  const t = appFor(dialect);
  const { expectCreated, expectRefused } = expectations(t);

  describe('metadata keys', () => {
    it('accepts keys of exactly 64 characters', async () => {
      await expectCreated(callBody(t, { metadata: { ['k'.repeat(64)]: 'v' } }));
    });

    it('refuses a key of 65 characters, with param metadata', async () => {
      const error = await expectRefused(callBody(t, { metadata: { ok: 1, ['k'.repeat(65)]: 'v' } }), { param: 'metadata' });
      // It names the key as the fault, not the metadata as a whole.
      assert.equal(error.message, `metadata keys must be at most 64 characters; "${'k'.repeat(65)}" is longer.`);
    });

    it('counts characters, not bytes: 64 é (128 UTF-8 bytes) is allowed, 65 é is not', async () => {
      await expectCreated(callBody(t, { metadata: { ['é'.repeat(64)]: 'v' } }));
      await expectRefused(callBody(t, { metadata: { ['é'.repeat(65)]: 'v' } }), { param: 'metadata' });
    });

    it('counts a character outside the BMP once (64 emoji = 128 UTF-16 units is allowed, 65 is not)', async () => {
      await expectCreated(callBody(t, { metadata: { ['😀'.repeat(64)]: 'v' } }));
      await expectRefused(callBody(t, { metadata: { ['😀'.repeat(65)]: 'v' } }), { param: 'metadata' });
    });

    it('keys are otherwise free: empty, spaces, dots, names of Object methods', async () => {
      await expectCreated(callBody(t, { metadata: { '': 1, 'a b': 2, 'a.b': 3, constructor: 'c', toString: 't', hasOwnProperty: null } }));
    });
  });

  describe('metadata values', () => {
    it('accepts strings, numbers, booleans and null, and stores them as sent', async () => {
      const metadata = { s: 'text', empty: '', i: 42, neg: -7, f: 3.25, big: 1e300, zero: 0, t: true, f2: false, n: null };
      const res = await expectCreated(callBody(t, { metadata }));
      const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', res.json().id).executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(row.metadata ?? 'null'), metadata);
    });

    it('accepts an empty metadata object and an absent one', async () => {
      await expectCreated(callBody(t, { metadata: {} }));
      await expectCreated(callBody(t));
    });

    it('refuses a nested object or an array as a value', async () => {
      for (const value of [{ b: 1 }, {}, [], [1, 2], ['x']]) {
        await expectRefused(callBody(t, { metadata: { ok: 'fine', a: value } }), { param: /^metadata(\.a)?$/ });
      }
      const error = await expectRefused(callBody(t, { metadata: { a: { b: 1 } } }), { param: 'metadata.a' });
      assert.equal(error.message, 'metadata.a must be a string, a number, a boolean or null.');
      const agent = await expectRefused(callBody(t, { agent_id: 42 }), { param: 'agent_id' });
      assert.equal(agent.message, 'agent_id must be a string.');
    });

    it("refuses a number that would not read back as sent (beyond a double's precision or range), naming it and its field", async () => {
      const raw = (value: string) =>
        `{"agent_id":"${t.seed.agentId}","to":"+14155550123","metadata":{"order":${value},"note":"1e400 in a string is text"}}`;
      const refused: [string, string][] = [
        ['12345678901234567890', '12345678901234567000'],
        ['-9007199254740993', '-9007199254740992'],
        ['9007199254740993.0', '9007199254740992'],
        ['9.007199254740993e15', '9007199254740992'],
        ['1152921504606846976', '1152921504606847000'],
        ['1e400', 'Infinity'],
        ['-1e999', '-Infinity'],
        ['1.5e-400', '0'],
        ['3.14159265358979323846', '3.141592653589793'],
      ];
      for (const [value, readBack] of refused) {
        const error = await expectRefused(raw(value), { param: 'metadata.order' });
        assert.equal(
          error.message,
          `The number ${value} in metadata.order cannot be kept as written: stored as a double it would read back as ${readBack}. Send it as a string (integers beyond ±9007199254740991, or more than 15 significant digits).`,
        );
      }
      const to = await expectRefused(`{"agent_id":"${t.seed.agentId}","to":1e400}`, { param: 'to' });
      assert.match(String(to.message), /^The number 1e400 in to cannot be kept as written/);
      const accepted: [string, number][] = [
        ['9007199254740991', 9007199254740991],
        ['-9007199254740991', -9007199254740991],
        ['43019823882677370', 43019823882677370],
        ['1e300', 1e300],
        ['1.50e2', 150],
        ['0.1', 0.1],
        ['0e5', 0],
      ];
      for (const [value, kept] of accepted) {
        const res = await expectCreated(raw(value));
        const row = await t.services.db.selectFrom('calls').select('metadata').where('id', '=', res.json().id).executeTakeFirstOrThrow();
        assert.equal(JSON.parse(row.metadata ?? '{}').order, kept, value);
      }
    });

    it('refuses metadata that is not an object: null, an array, a string, a number, a boolean', async () => {
      for (const metadata of [null, [], [{ a: 1 }], 'a=b', '{"a":"b"}', 5, true]) {
        await expectRefused(callBody(t, { metadata }), { param: 'metadata' });
      }
    });
  });

  describe('metadata size (5 KB = 5,120 UTF-8 bytes of its JSON)', () => {
    it('accepts exactly 5,120 bytes', async () => {
      await expectCreated(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes) }));
    });

    it('refuses 5,121 bytes with param metadata', async () => {
      const error = await expectRefused(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes + 1) }), { param: 'metadata' });
      assert.match(String(error.message), /5121|5,121/);
    });

    it('adds up every key and value', async () => {
      const base: Record<string, unknown> = {};
      for (let i = 0; i < 60; i += 1) base[`field_${i}`] = i % 3 === 0 ? `value ${i}` : i % 3 === 1 ? i * 1000 : i % 2 === 0;
      await expectCreated(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes, base) }));
      await expectRefused(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes + 1, base) }), { param: 'metadata' });
    });

    it('counts multi-byte characters as UTF-8 bytes, not characters', async () => {
      // {"v":"…"} is 8 bytes around the value.
      await expectCreated(callBody(t, { metadata: { v: 'é'.repeat((metadataMaxBytes - 8) / 2) } }));
      // 2,557 é are only 2,565 characters of JSON but 5,122 bytes.
      await expectRefused(callBody(t, { metadata: { v: 'é'.repeat((metadataMaxBytes - 8) / 2 + 1) } }), { param: 'metadata' });
      await expectRefused(callBody(t, { metadata: { v: `x${'é'.repeat((metadataMaxBytes - 8) / 2)}` } }), { param: 'metadata' });
      await expectCreated(callBody(t, { metadata: { v: '😀'.repeat((metadataMaxBytes - 8) / 4) } }));
      await expectRefused(callBody(t, { metadata: { v: '😀'.repeat((metadataMaxBytes - 8) / 4 + 1) } }), { param: 'metadata' });
      // Three-byte characters in the key count too: 64 € keys are 192 bytes.
      const key = '€'.repeat(64);
      await expectCreated(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes, { [key]: true }) }));
      await expectRefused(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes + 1, { [key]: true }) }), { param: 'metadata' });
    });

    it('measures the JSON of the value: escapes count, the white space of the request does not', async () => {
      // A quote is serialised as \" (2 bytes).
      await expectCreated(callBody(t, { metadata: { v: '"'.repeat((metadataMaxBytes - 8) / 2) } }));
      await expectRefused(callBody(t, { metadata: { v: '"'.repeat((metadataMaxBytes - 8) / 2 + 1) } }), { param: 'metadata' });
      // Exactly 5,120 bytes of compact JSON, sent pretty-printed (well over 5,120 bytes on the wire).
      const pretty = JSON.stringify(callBody(t, { metadata: metadataOfBytes(metadataMaxBytes, { a: 1, b: 'two', c: null }) }), null, 8);
      const res = await t.createCall(pretty);
      assert.equal(res.statusCode, 201, res.body);
    });
  });

  describe('the body as a whole', () => {
    it('refuses an unknown top-level field, naming it in param', async () => {
      for (const field of ['callback_url', 'Agent_ID', 'To', 'meta_data', 'dynamic_variables', 'status', 'id']) {
        const error = await expectRefused(callBody(t, { [field]: 'x' }), { param: field });
        assert.match(String(error.message), new RegExp(field));
      }
    });

    it('refuses an unknown field even when its value is null', async () => {
      await expectRefused(callBody(t, { extra: null }), { param: 'extra' });
    });

    it('refuses an empty object, naming a missing field', async () => {
      const error = await expectRefused({}, { param: /^(agent_id|to)$/ });
      assert.match(String(error.message), /agent_id|to/);
    });

    it('refuses a JSON array (even one holding a valid body), a string, a number, true and null, without a param', async () => {
      for (const body of ['[]', JSON.stringify([callBody(t)]), '"+14155550123"', '42', 'true', 'null']) {
        await expectRefused(body, { param: undefined });
      }
    });
  });
});
