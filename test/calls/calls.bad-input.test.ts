/**
 * Whatever a client sends, the answer is a JSON error with a code from the catalogue and a request id,
 * never a 500: broken JSON, wrong media types, oversized bodies, prototype-pollution keys, wrong methods,
 * unknown paths, and requests Node's HTTP parser itself refuses on a real socket.
 */
import assert from 'node:assert/strict';
import type net from 'node:net';
import { before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { rawRequest, type RawResponse } from '../support/raw-http.js';
import { appFor, callBody, countCalls, type TestApp } from '../support/test-app.js';

const bodyLimitBytes = 64 * 1024;

/** A valid-JSON body of exactly `bytes` bytes (an agent_id padded with x, so a 403 once it is parsed). */
function jsonBodyOfBytes(bytes: number): string {
  const frame = JSON.stringify({ agent_id: '', to: '+14155550123' });
  const body = JSON.stringify({ agent_id: 'x'.repeat(bytes - Buffer.byteLength(frame)), to: '+14155550123' });
  assert.equal(Buffer.byteLength(body), bytes);
  return body;
}

/** Requests to the app `t` with its seeded key: `post` sends a raw body with a content type (or none). */
function requests(t: TestApp) {
  const auth = () => ({ authorization: `Bearer ${t.seed.token}` });

  function post(payload: string | Buffer | undefined, contentType: string | undefined): Promise<LightMyRequestResponse> {
    const headers: Record<string, string> = auth();
    if (contentType !== undefined) headers['content-type'] = contentType;
    const options: InjectOptions = { method: 'POST', url: '/v1/calls', headers };
    if (payload !== undefined) options.payload = payload;
    return t.inject(options);
  }
  return { auth, post };
}

await forEachDialect('POST /v1/calls with bad input: JSON, media types and sizes', (dialect) => {
  const t = appFor(dialect);
  const { auth, post } = requests(t);

  describe('JSON', () => {
    it('malformed JSON is 400 invalid_json', async () => {
      for (const payload of [
        '{bad',
        '{"agent_id":',
        "{'agent_id':'agent_test_reminders'}",
        '{"agent_id":"a","to":"+14155550123",}',
        '{"agent_id":"a"} trailing',
        '{"a":1}{"b":2}',
        'NaN',
        'undefined',
        '{"to":+14155550123}',
        '{"to":"\\x41"}',
        '\u0000',
        '   ',
        '\ufeff{"agent_id":"a"}x',
      ]) {
        const error = assertErrorShape(await post(payload, 'application/json'), 400, 'invalid_json');
        assert.equal('param' in error, false);
      }
    });

    it('invalid UTF-8 bytes are 400 invalid_json, even where the body is otherwise a valid call', async () => {
      const agent = t.seed.agentId;
      for (const bytes of [
        Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        // A call that would be created, but for one byte that is not UTF-8 (0xff; then a lone continuation byte;
        // then an overlong encoding of "/").
        ...[[0xff], [0x80], [0xc0, 0xaf]].map((bad) =>
          Buffer.concat([
            Buffer.from(`{"agent_id":"${agent}","to":"+14155550123","metadata":{"a":"`),
            Buffer.from(bad),
            Buffer.from('"}}'),
          ]),
        ),
      ]) {
        const callsBefore = await countCalls(t.services);
        const error = assertErrorShape(await post(bytes, 'application/json'), 400, 'invalid_json');
        assert.match(String(error.message), /UTF-8/);
        assert.equal(await countCalls(t.services), callsBefore);
      }
      // Multi-byte UTF-8 is of course fine.
      const res = await post(Buffer.from(JSON.stringify({ ...callBody(t), metadata: { name: 'Zoë 日本 🎉' } })), 'application/json');
      assert.equal(res.statusCode, 201, res.body);
    });

    it('an empty body with a JSON content type is 400 invalid_json', async () => {
      assertErrorShape(await post('', 'application/json'), 400, 'invalid_json');
      assertErrorShape(await post(undefined, 'application/json'), 400, 'invalid_json');
    });

    it('__proto__ and constructor.prototype keys are refused with a 4xx JSON error and pollute nothing', async () => {
      const agent = t.seed.agentId;
      for (const payload of [
        `{"agent_id":"${agent}","to":"+14155550123","__proto__":{"polluted":true}}`,
        `{"__proto__":{"agent_id":"${agent}","to":"+14155550123"}}`,
        `{"agent_id":"${agent}","to":"+14155550123","metadata":{"__proto__":{"polluted":true}}}`,
        `{"agent_id":"${agent}","to":"+14155550123","metadata":{"__proto__":"x"}}`,
        `{"agent_id":"${agent}","to":"+14155550123","constructor":{"prototype":{"polluted":true}}}`,
        `{"agent_id":"${agent}","to":"+14155550123","metadata":{"constructor":{"prototype":{"polluted":true}}}}`,
      ]) {
        const callsBefore = await countCalls(t.services);
        const res = await post(payload, 'application/json');
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${res.statusCode} for ${payload}`);
        assertErrorShape(res, res.statusCode, String(res.json().error));
        assert.equal(res.json().error, 'invalid_request', payload);
        // The body is valid JSON: the message says what is refused instead of calling it malformed.
        assert.match(String(res.json().message), /__proto__/);
        assert.equal(await countCalls(t.services), callsBefore);
      }
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    it('nesting of any depth is 400 invalid_request naming the limit, with an Idempotency-Key or without', async () => {
      const agent = t.seed.agentId;
      let nestedMetadata = '1';
      for (let level = 0; level < 10_000; level++) nestedMetadata = `{"a":${nestedMetadata}}`;
      const bodies = [
        `${'['.repeat(3000)}${']'.repeat(3000)}`,
        `{"agent_id":"${agent}","to":"+14155550123","metadata":${nestedMetadata}}`,
        // Just past the limit, and unbalanced (the pre-scan counts depth; validity is the parser's).
        `{"agent_id":"${agent}","to":"+14155550123","metadata":{"a":${'['.repeat(32)}`,
      ];
      for (const payload of bodies) {
        for (const key of [undefined, `deep-${Math.random()}`]) {
          const callsBefore = await countCalls(t.services);
          const res = await t.inject({
            method: 'POST',
            url: '/v1/calls',
            headers: { ...auth(), 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
            payload,
          });
          const error = assertErrorShape(res, 400, 'invalid_request');
          assert.match(String(error.message), /nested deeper than 32 levels/, `${payload.slice(0, 60)} key=${key}`);
          assert.equal(await countCalls(t.services), callsBefore);
        }
      }
      // Brackets inside strings are not nesting: a flat body with many of them is a call as usual.
      const flat = await post(JSON.stringify(callBody(t, { metadata: { note: '['.repeat(5000) } })), 'application/json');
      assert.equal(flat.statusCode, 201, flat.body);
    });

    it('a NUL character anywhere in a JSON body is 400 invalid_request naming the field, with an Idempotency-Key or without', async () => {
      const agent = t.seed.agentId;
      const cases: [Record<string, unknown>, string][] = [
        [{ agent_id: `${agent}\u0000`, to: '+14155550123' }, 'agent_id'],
        [{ agent_id: agent, to: '+14155550123\u0000' }, 'to'],
        [{ agent_id: agent, to: '+14155550123', metadata: { note: 'a\u0000b' } }, 'metadata.note'],
        [{ agent_id: agent, to: '+14155550123', metadata: { 'k\u0000': 'v' } }, 'metadata'],
      ];
      for (const [body, param] of cases) {
        for (const key of [undefined, `nul-${Math.random()}`]) {
          const callsBefore = await countCalls(t.services);
          const res = await t.inject({
            method: 'POST',
            url: '/v1/calls',
            headers: { ...auth(), 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
            // JSON.stringify writes U+0000 as the escape \u0000, as any client does.
            payload: JSON.stringify(body),
          });
          const error = assertErrorShape(res, 400, 'invalid_request');
          assert.equal(error.param, param);
          assert.match(String(error.message), /NUL character \(U\+0000\)/);
          assert.equal(await countCalls(t.services), callsBefore);
        }
      }
    });

    it('a NUL character in a query parameter is 400 invalid_request naming it', async () => {
      for (const [url, param] of [
        ['/v1/calls?agent_id=%00', 'agent_id'],
        ['/v1/calls?starting_after=call_%00', 'starting_after'],
        ['/v1/calls?status=completed%00', 'status'],
      ] as const) {
        const error = assertErrorShape(await t.inject({ method: 'GET', url, headers: auth() }), 400, 'invalid_request');
        assert.equal(error.param, param, url);
      }
    });
  });

  describe('content type', () => {
    it('text/plain, form-urlencoded, multipart, XML, look-alikes and no content type are 415 unsupported_media_type', async () => {
      const json = JSON.stringify(callBody(t));
      for (const contentType of [
        'text/plain',
        'text/plain; charset=utf-8',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=xyz',
        'application/xml',
        'text/json',
        'application/jsonx',
        'application/octet-stream',
        undefined,
      ]) {
        const callsBefore = await countCalls(t.services);
        assertErrorShape(await post(json, contentType), 415, 'unsupported_media_type');
        assert.equal(await countCalls(t.services), callsBefore, `stored a call for ${String(contentType)}`);
      }
    });

    it('accepts application/json with a charset parameter, and in any case', async () => {
      for (const contentType of [
        'application/json; charset=utf-8',
        'application/json;charset=UTF-8',
        'application/json; charset="utf-8"',
        'Application/JSON',
      ]) {
        const res = await post(JSON.stringify(callBody(t)), contentType);
        assert.equal(res.statusCode, 201, `${contentType}: ${res.body}`);
      }
    });

    it('a charset other than UTF-8 is 415, and so is a compressed body', async () => {
      const json = JSON.stringify(callBody(t));
      for (const contentType of [
        'application/json; charset=iso-8859-1',
        'application/json; charset=utf-16',
        'application/json; charset="latin1"',
      ]) {
        const callsBefore = await countCalls(t.services);
        const error = assertErrorShape(await post(json, contentType), 415, 'unsupported_media_type');
        assert.match(String(error.message), /UTF-8/);
        assert.equal(await countCalls(t.services), callsBefore, contentType);
      }
      for (const encoding of ['gzip', 'br', 'deflate']) {
        const res = await t.inject({
          method: 'POST',
          url: '/v1/calls',
          headers: { ...auth(), 'content-type': 'application/json', 'content-encoding': encoding },
          payload: json,
        });
        const error = assertErrorShape(res, 415, 'unsupported_media_type');
        assert.match(String(error.message), new RegExp(`Content-Encoding ${encoding}`));
      }
      const identity = await t.inject({
        method: 'POST',
        url: '/v1/calls',
        headers: { ...auth(), 'content-type': 'application/json', 'content-encoding': 'identity' },
        payload: json,
      });
      assert.equal(identity.statusCode, 201, identity.body);
    });

    it('a POST without a body or content type is a 4xx JSON error', async () => {
      const res = await post(undefined, undefined);
      assert.ok([400, 415].includes(res.statusCode), res.body);
      assertErrorShape(res, res.statusCode, res.statusCode === 415 ? 'unsupported_media_type' : 'invalid_request');
    });
  });

  describe('body size (64 KB)', () => {
    it('a body of exactly 64 KB is read (here: 403 for its unknown agent)', async () => {
      assertErrorShape(await post(jsonBodyOfBytes(bodyLimitBytes), 'application/json'), 403, 'agent_not_found');
    });

    it('a body of 64 KB + 1 byte is 413 payload_too_large', async () => {
      assertErrorShape(await post(jsonBodyOfBytes(bodyLimitBytes + 1), 'application/json'), 413, 'payload_too_large');
    });

    it('a 1 MB body is 413 payload_too_large, JSON or not', async () => {
      const megabyte = 'x'.repeat(1024 * 1024);
      assertErrorShape(await post(megabyte, 'application/json'), 413, 'payload_too_large');
      assertErrorShape(await post(jsonBodyOfBytes(1024 * 1024), 'application/json'), 413, 'payload_too_large');
    });
  });
});

await forEachDialect('Bad input to the API: methods, paths, sockets and garbage', (dialect) => {
  const t = appFor(dialect);
  const { auth, post } = requests(t);

  describe('methods and paths', () => {
    /** The methods the Allow header of a 405 on `url` names. */
    async function allowedMethods(url: string): Promise<string[]> {
      const res = await t.inject({ method: 'PUT', url, headers: { ...auth(), 'content-type': 'application/json' }, payload: '{}' });
      assertErrorShape(res, 405, 'method_not_allowed');
      return String(res.headers.allow ?? '')
        .split(',')
        .map((method) => method.trim())
        .filter(Boolean);
    }

    it('PUT, PATCH, DELETE and OPTIONS /v1/calls are 405 method_not_allowed with an Allow header naming POST, body unread', async () => {
      const allowed = await allowedMethods('/v1/calls');
      assert.ok(allowed.includes('POST'), `Allow: ${allowed.join(', ')}`);
      for (const method of ['PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const) {
        assert.equal(allowed.includes(method), false);
        const res = await t.inject({
          method,
          url: '/v1/calls',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload: '{not json',
        });
        const error = assertErrorShape(res, 405, 'method_not_allowed');
        assert.equal(error.message, 'Use GET or POST on /v1/calls.');
        assert.deepEqual(
          String(res.headers.allow)
            .split(',')
            .map((m) => m.trim()),
          allowed,
          method,
        );
      }
      const onACall = await t.inject({ method: 'DELETE', url: '/v1/calls/call_x', headers: auth() });
      assert.equal(assertErrorShape(onACall, 405, 'method_not_allowed').message, 'Use GET on /v1/calls/{id}.');
      assert.equal(onACall.headers.allow, 'GET, HEAD');
    });

    it('GET and HEAD /v1/calls are 405 with the same Allow header exactly when Allow does not name them', async () => {
      // GET /v1/calls is a 405 while calls cannot be listed, and the list once they can.
      const allowed = await allowedMethods('/v1/calls');
      for (const method of ['GET', 'HEAD'] as const) {
        const res = await t.inject({ method, url: '/v1/calls', headers: auth() });
        assert.match(String(res.headers['x-request-id']), /^req_/);
        if (allowed.includes(method)) {
          assert.notEqual(res.statusCode, 405, `${method} is in Allow but answered 405`);
          assert.ok(res.statusCode < 500, `${method}: ${res.statusCode}`);
        } else {
          assert.equal(res.statusCode, 405, method);
          assert.equal(res.headers.allow, allowed.join(', '));
          if (method === 'GET') assertErrorShape(res, 405, 'method_not_allowed');
        }
      }
    });

    it('POST, PUT and DELETE /healthz are 405 naming GET; HEAD on a POST-only path is 405 too', async () => {
      for (const method of ['POST', 'PUT', 'DELETE'] as const) {
        const res = await t.inject({ method, url: '/healthz', headers: { 'content-type': 'application/json' }, payload: '{}' });
        assert.equal(assertErrorShape(res, 405, 'method_not_allowed').message, 'Use GET on /healthz.', method);
        assert.equal(res.headers.allow, 'GET, HEAD');
      }
      assert.equal((await t.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      const head = await t.inject({ method: 'HEAD', url: '/providers/elevenlabs/webhook' });
      assert.equal(head.statusCode, 405);
      assert.equal(head.headers.allow, 'POST');
    });

    it('unknown paths are 404 not_found; under /v1 only with a valid key, which they count against', async () => {
      for (const url of ['/nope', '/v2/calls', '/V1/CALLS/']) {
        for (const headers of [auth(), {}]) {
          assertErrorShape(await t.inject({ method: 'GET', url, headers }), 404, 'not_found');
        }
      }
      for (const url of ['/v1/nope', '/v1/calls/x/y', '/v1/']) {
        assertErrorShape(await t.inject({ method: 'GET', url }), 401, 'unauthorized');
        const res = await t.inject({ method: 'GET', url: `${url}?q=1`, headers: auth() });
        const error = assertErrorShape(res, 404, 'not_found');
        assert.equal(error.message, `Unrecognized request URL: GET ${url}. Every route is listed in the API reference at /docs.`);
        assert.ok(res.headers.ratelimit, `${url} is counted against the key's limit`);
      }
      assertErrorShape(
        await t.inject({ method: 'POST', url: '/v1/nope', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{}' }),
        404,
        'not_found',
      );
    });

    it('a malformed percent-encoding or an over-long path parameter is a JSON 4xx with a request id', async () => {
      for (const url of ['/v1/calls/%F0', '/v1/calls/%zz', '/nope/%ED%A0%80', `/v1/calls/call_${'x'.repeat(500)}`]) {
        const res = await t.inject({ method: 'GET', url, headers: auth() });
        assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${url}: ${res.statusCode}`);
        const error = assertErrorShape(res, res.statusCode, String(res.json().error));
        assert.ok(['invalid_request', 'not_found'].includes(String(error.error)), `${url}: ${res.body}`);
      }
    });

    it('a URL the router refuses (over-long id, bad percent-encoding) still passes the /v1 gate: 401 without a key, counted and logged with one', async () => {
      const urls = [`/v1/calls/call_${'x'.repeat(500)}`, `/v1/events/evt_${'x'.repeat(200)}`, '/v1/calls/%zz'];
      for (const url of urls) {
        const anonymous = await t.inject({ method: 'GET', url });
        assertErrorShape(anonymous, 401, 'unauthorized');
        assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="callgate"');
      }
      const withKey = await t.inject({ method: 'GET', url: urls[0]!, headers: auth() });
      assertErrorShape(withKey, 404, 'not_found');
      assert.match(String(withKey.headers.ratelimit), /^"per-key";r=\d+;t=\d+$/);
      assert.match(String(withKey.headers['ratelimit-policy']), /^"per-key";q=\d+;w=60$/);
      await t.services.requestLog.flush();
      const row = await t.services.db
        .selectFrom('request_logs')
        .selectAll()
        .where('id', '=', String(withKey.headers['x-request-id']))
        .executeTakeFirstOrThrow();
      assert.equal(row.status, 404);
      assert.equal(row.error_code, 'not_found');
      assert.equal(JSON.parse(row.response_body!).request_id, withKey.headers['x-request-id']);
    });

    it('a NUL byte in a call id is 404, never 500', async () => {
      assertErrorShape(await t.inject({ method: 'GET', url: '/v1/calls/call_%00', headers: auth() }), 404, 'not_found');
    });
  });

  describe('through a real socket', () => {
    let port: number;
    before(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as net.AddressInfo).port;
    });

    async function assertServerStillUp(): Promise<void> {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'ok', database: dialect });
    }

    function assertRawJsonError(res: RawResponse, status: number): void {
      assert.equal(res.status, status, JSON.stringify(res));
      assert.match(res.headers['content-type'] ?? '', /^application\/json/);
      const body = JSON.parse(res.body) as Record<string, unknown>;
      assert.equal(typeof body.error, 'string');
      assert.equal(typeof body.message, 'string');
      assert.match(String(body.request_id), /^req_[0-9a-z]+$/);
      assert.equal(res.headers['x-request-id'], body.request_id);
    }

    it('requests the HTTP parser refuses get a JSON 400 with a request id, and the server stays up', async () => {
      for (const request of [
        'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n',
        'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n',
        'GARBAGE\r\n\r\n',
        'GET /healthz HTTP/9.9\r\n\r\n',
        '\x00\x01\x02\r\n\r\n',
        'POST /v1/calls HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello',
        'POST /v1/calls HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
        'POST /v1/calls HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n',
      ]) {
        assertRawJsonError(await rawRequest(port, request), 400);
        await assertServerStillUp();
      }
    });

    it('an Idempotency-Key with a control byte the parser refuses (0x7F, 0x01) is 400 invalid_idempotency_key, like any other bad key', async () => {
      for (const key of ['order\x7f1', 'order\x011']) {
        const body = JSON.stringify({ agent_id: t.seed.agentId, to: '+14155550123' });
        const res = await rawRequest(
          port,
          Buffer.from(
            `POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.seed.token}\r\nContent-Type: application/json\r\nIdempotency-Key: ${key}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
            'latin1',
          ),
        );
        assertRawJsonError(res, 400);
        assert.equal(JSON.parse(res.body).error, 'invalid_idempotency_key', JSON.stringify(key));
        await assertServerStillUp();
      }
      // Another header with such a byte is a malformed request, as before.
      const other = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Idempotency-Key-Note: a\x7fb\r\n\r\n');
      assertRawJsonError(other, 400);
      assert.equal(JSON.parse(other.body).error, 'invalid_request');
    });

    it('headers larger than the parser allows get a JSON 431 headers_too_large and the server stays up', async () => {
      const res = await rawRequest(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`);
      assert.equal(res.status, 431, JSON.stringify(res).slice(0, 300));
      assertRawJsonError(res, 431);
      assert.equal(JSON.parse(res.body).error, 'headers_too_large');
      await assertServerStillUp();
    });

    it('over HTTP, malformed JSON and wrong media types get the same JSON errors as through inject', async () => {
      const url = `http://127.0.0.1:${port}/v1/calls`;
      const bad = await fetch(url, { method: 'POST', headers: { ...auth(), 'content-type': 'application/json' }, body: '{bad' });
      assert.equal(bad.status, 400);
      const badBody = (await bad.json()) as Record<string, unknown>;
      assert.equal(badBody.error, 'invalid_json');
      assert.equal(bad.headers.get('x-request-id'), badBody.request_id);

      const text = await fetch(url, { method: 'POST', headers: { ...auth(), 'content-type': 'text/plain' }, body: 'hi' });
      assert.equal(text.status, 415);
      assert.equal(((await text.json()) as Record<string, unknown>).error, 'unsupported_media_type');

      const big = await fetch(url, {
        method: 'POST',
        headers: { ...auth(), 'content-type': 'application/json' },
        body: jsonBodyOfBytes(1024 * 1024),
      }).catch((error: unknown) => error as Error);
      // The server may close the connection before the whole body is sent; when it answers, it is a 413.
      if (!(big instanceof Error)) {
        assert.equal(big.status, 413);
        assert.equal(((await big.json()) as Record<string, unknown>).error, 'payload_too_large');
      }
      await assertServerStillUp();
    });
  });

  describe('garbage never gives a 5xx', () => {
    it('arbitrary bodies, content types and shapes are answered below 500, with a JSON error and a request id', async () => {
      const e164 = fc
        .tuple(fc.integer({ min: 1, max: 9 }), fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 6, maxLength: 14 }))
        .map(([first, rest]) => `+${first}${rest}`);
      // Strings known to trip storage or parsers, mixed in so that a few hundred runs meet them. The
      // generators lean towards nearly valid bodies: only those reach the database.
      const nasty = fc.constantFrom(
        '',
        '\u0000',
        'agent_\u0000',
        `${t.seed.agentId}\u0000`,
        '\ud800',
        '__proto__',
        'constructor',
        '😀'.repeat(65),
        "'; --",
      );
      const anyValue = fc.oneof(fc.jsonValue(), fc.string({ unit: 'binary' }), nasty);
      const absent = fc.constant(undefined);
      const callLike = fc.record({
        agent_id: fc.oneof({ arbitrary: fc.constant(t.seed.agentId), weight: 2 }, { arbitrary: nasty, weight: 2 }, anyValue),
        to: fc.oneof({ arbitrary: e164, weight: 3 }, anyValue),
        metadata: fc.oneof(
          { arbitrary: absent, weight: 2 },
          fc.dictionary(fc.oneof(fc.string({ unit: 'binary', maxLength: 70 }), nasty), anyValue),
          anyValue,
        ),
        extra: fc.oneof({ arbitrary: absent, weight: 4 }, anyValue),
      });
      const payload = fc.oneof(
        { arbitrary: callLike.map((body) => JSON.stringify(body)), weight: 6 },
        fc.jsonValue().map((value) => JSON.stringify(value) ?? ''),
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
      );
      const contentType = fc.oneof(
        { arbitrary: fc.constant('application/json'), weight: 6 },
        fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', undefined),
      );
      await fc.assert(
        fc.asyncProperty(payload, contentType, async (body, type) => {
          const res = await post(body, type);
          assert.ok(res.statusCode < 500, `${res.statusCode} for ${JSON.stringify(String(body)).slice(0, 300)}: ${res.body}`);
          assert.match(String(res.headers['x-request-id']), /^req_/);
          if (res.statusCode >= 400) assertErrorShape(res, res.statusCode, String(res.json().error));
          else assert.equal(res.statusCode, 201);
        }),
        { numRuns: 200 },
      );
    });
  });
});
