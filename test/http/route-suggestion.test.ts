/**
 * The 404 of an unknown /v1 path names the route a typo most likely meant, and the API reference: through
 * the real app (its routes learned as they were added), and the matching rules on their own.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { closestRoute } from '../../src/http/route-suggestion.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('Unknown /v1 paths: the route meant', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const ask = (method: 'GET' | 'POST' | 'DELETE', url: string) =>
    t.inject({ method, url, headers: { authorization: `Bearer ${t.seed.token}` } });

  for (const [method, url, meant] of [
    ['GET', '/v1/call/call_x', 'GET /v1/calls/{id}'],
    ['POST', '/v1/calls/call_x/cancle', 'POST /v1/calls/{id}/cancel'],
    ['GET', '/v1/calls/call_x/transcripts', 'GET /v1/calls/{id}/transcript'],
    ['GET', '/v1/webhook-endpoints', 'GET /v1/webhook_endpoints'],
    ['GET', '/v1/batch/batch_x/recipients', 'GET /v1/batches/{id}/recipients'],
  ] as const) {
    it(`${method} ${url}: 404 pointing at ${meant} and /docs`, async () => {
      const error = assertErrorShape(await ask(method, url), 404, 'not_found');
      assert.equal(
        error.message,
        `Unrecognized request URL: ${method} ${url}. Did you mean ${meant}? Every route is listed in the API reference at /docs.`,
      );
    });
  }

  it('a path like no route names none, only the reference', async () => {
    const error = assertErrorShape(await ask('GET', '/v1/invoices/inv_1/lines'), 404, 'not_found');
    assert.equal(
      error.message,
      'Unrecognized request URL: GET /v1/invoices/inv_1/lines. Every route is listed in the API reference at /docs.',
    );
  });

  it('the rules: parameters match any segment, the same method wins a tie, routes that only answer 405 are not known', () => {
    const routes = [
      { method: 'GET', url: '/v1/calls/:id' },
      { method: 'POST', url: '/v1/calls' },
      { method: 'GET', url: '/v1/calls' },
    ];
    assert.equal(closestRoute(routes, 'GET', '/v1/cals'), 'GET /v1/calls');
    assert.equal(closestRoute(routes, 'POST', '/v1/cals'), 'POST /v1/calls');
    assert.equal(closestRoute(routes, 'GET', '/v1/calls/anything'), 'GET /v1/calls/{id}');
    assert.equal(closestRoute(routes, 'GET', '/v1/zzzzz'), undefined);
    assert.equal(closestRoute(routes, 'GET', '/v1/calls/a/b/c'), undefined);
  });
});
