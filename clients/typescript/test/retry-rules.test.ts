/**
 * The retry rules' pieces that the server never exercises by itself: Retry-After as an HTTP date, which
 * thrown errors count as "no answer", and a caller's AbortSignal stopping a wait between tries.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbortedError, Callgate, CallgateError } from '../src/index.js';
import { isNetworkError, parseRetryAfter } from '../src/http.js';

describe('Retry-After', () => {
  it('reads delta seconds and HTTP dates; nothing else', () => {
    const now = Date.parse('2026-11-24T09:00:00Z');
    assert.equal(parseRetryAfter('3', now), 3000);
    assert.equal(parseRetryAfter(' 0 ', now), 0);
    assert.equal(parseRetryAfter('Tue, 24 Nov 2026 09:00:05 GMT', now), 5000);
    assert.equal(parseRetryAfter('Tue, 24 Nov 2026 08:59:00 GMT', now), 0, 'a date passed means now');
    assert.equal(parseRetryAfter(null, now), undefined);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter('-1', now), undefined);
  });
});

describe('network errors', () => {
  const fetchFailed = (code: string, message = 'x') =>
    new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });

  it('counts refused, reset and hung-up connections and timeouts, not programming errors', () => {
    for (const code of ['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT']) {
      assert.equal(isNetworkError(fetchFailed(code)), true, code);
    }
    assert.equal(isNetworkError(new Error('socket hang up')), true);
    assert.equal(isNetworkError(new TypeError('terminated')), true, 'a body cut off');
    assert.equal(isNetworkError(new TypeError('Failed to parse URL from nope')), false);
    assert.equal(isNetworkError(new RangeError('bad')), false);
    assert.equal(isNetworkError('fetch failed'), false);
  });
});

describe('a caller’s AbortSignal', () => {
  it('stops the wait before a retry, with an AbortedError that keeps the Idempotency-Key', async () => {
    const controller = new AbortController();
    let tries = 0;
    const callgate = new Callgate({
      apiKey: 'cg_test_x',
      baseUrl: 'http://127.0.0.1:9',
      initialRetryDelayMs: 60_000,
      fetch: async () => {
        tries++;
        // The abort comes while the client waits out this 503's Retry-After.
        setImmediate(() => controller.abort());
        return new Response('{"error":"service_unavailable","message":"closing","request_id":"req_1"}', {
          status: 503,
          headers: { 'retry-after': '30' },
        });
      },
    });
    const started = Date.now();
    const error = await callgate.calls.create({ agent_id: 'agent_x', to: '+14155550123' }, { signal: controller.signal }).then(
      () => assert.fail('expected an abort'),
      (reason: unknown) => reason,
    );
    assert.ok(error instanceof AbortedError);
    assert.ok(error instanceof CallgateError);
    assert.equal(error.code, 'aborted');
    assert.match(String(error.idempotency_key), /^[0-9a-f-]{36}$/);
    assert.equal(tries, 1);
    assert.ok(Date.now() - started < 5_000);
  });

  it('a body that is not JSON on a success is a CallgateError, not a SyntaxError', async () => {
    const callgate = new Callgate({
      apiKey: 'cg_test_x',
      baseUrl: 'http://127.0.0.1:9',
      fetch: async () => new Response('<html>proxy</html>', { status: 200, headers: { 'x-request-id': 'req_2' } }),
    });
    const error = await callgate.calls.retrieve('call_x').then(
      () => assert.fail('expected an error'),
      (reason: unknown) => reason,
    );
    assert.ok(error instanceof CallgateError);
    assert.equal(error.code, 'invalid_response');
    assert.equal(error.request_id, 'req_2');
  });
});

describe('the answer’s retryable', () => {
  const answering = (answers: { status: number; body: string }[]) => {
    let tries = 0;
    const fetch = async () => {
      const answer = answers[Math.min(tries++, answers.length - 1)]!;
      return new Response(answer.body, { status: answer.status, headers: { 'content-type': 'application/json' } });
    };
    return { fetch, tries: () => tries };
  };
  const quick = { apiKey: 'cg_test_x', baseUrl: 'http://callgate.invalid', initialRetryDelayMs: 1, maxRetryDelayMs: 2, maxRetries: 2 };

  it('a 5xx that says retryable false is thrown after one try; one that says true is tried again', async () => {
    const refused = answering([
      { status: 503, body: '{"error":"provider_unavailable","message":"m","request_id":"req_1","retryable":false}' },
    ]);
    const error = await new Callgate({ ...quick, fetch: refused.fetch }).calls.retrieve('call_x').catch((reason: unknown) => reason);
    assert.ok(error instanceof CallgateError);
    assert.equal(error.retryable, false);
    assert.equal(refused.tries(), 1);
    const busy = answering([
      { status: 503, body: '{"error":"database_unavailable","message":"m","request_id":"req_2","retryable":true}' },
      { status: 200, body: '{"id":"call_x"}' },
    ]);
    assert.equal((await new Callgate({ ...quick, fetch: busy.fetch }).calls.retrieve('call_x')).id, 'call_x');
    assert.equal(busy.tries(), 2);
  });

  it('a 5xx without callgate’s body (a proxy’s page) is tried again, as every client that reads nothing would', async () => {
    const proxy = answering([
      { status: 502, body: '<html>Bad Gateway</html>' },
      { status: 200, body: '{"id":"call_x"}' },
    ]);
    assert.equal((await new Callgate({ ...quick, fetch: proxy.fetch }).calls.retrieve('call_x')).id, 'call_x');
    assert.equal(proxy.tries(), 2);
  });
});
