/**
 * Whatever a browser (or anything else) sends to the portal, the answer is one of its HTML pages below 500,
 * and no error is logged: bodies the portal cannot read (JSON, compressed, another charset, invalid UTF-8)
 * and U+0000 in any form field or query parameter, on SQLite and PostgreSQL alike.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { memoryLogs, type MemoryLogs } from '../support/memory-logs.js';
import { portalOrigin, signedInClient, signInForm } from '../support/portal-client.js';

/** Lines logged at error level or above (pino: 50 error, 60 fatal). */
function errorLines(logs: MemoryLogs): string[] {
  return logs.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
}

function assertPortalRefusal(response: LightMyRequestResponse, what: string): void {
  assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${what}: ${response.statusCode} ${response.body.slice(0, 200)}`);
  assert.match(String(response.headers['content-type']), /^text\/html/, what);
  assert.match(response.body, /Request id <code>req_/, what);
}

await forEachDialect('Portal: bodies and text it cannot take', (dialect) => {
  let t: TestApp;
  let logs: MemoryLogs;
  before(async () => {
    logs = memoryLogs();
    t = await startTestApp(dialect, { overrides: { logger: logs.logger } });
  });
  after(async () => t.close());

  /** Bodies the portal's forms never are, each with the headers that make it so. */
  const unreadable: {
    name: string;
    contentType: string;
    payload: string | Buffer | ((csrf: string) => string | Buffer);
    encoding?: string;
  }[] = [
    { name: 'JSON', contentType: 'application/json', payload: '{"email":"a@x.test","password":"p"}' },
    { name: 'gzip JSON', contentType: 'application/json', payload: gzipSync('{"email":"a@x.test"}'), encoding: 'gzip' },
    { name: 'latin1 JSON', contentType: 'application/json; charset=latin1', payload: Buffer.from('{"email":"\xe9@x.test"}', 'latin1') },
    { name: 'invalid UTF-8 JSON', contentType: 'application/json', payload: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) },
    { name: '__proto__ JSON', contentType: 'application/json', payload: '{"__proto__":{"x":1}}' },
    { name: '1e400 JSON', contentType: 'application/json', payload: '{"n":1e400}' },
    { name: 'deep JSON', contentType: 'application/json', payload: `${'['.repeat(3000)}${']'.repeat(3000)}` },
    { name: 'gzip form', contentType: 'application/x-www-form-urlencoded', payload: gzipSync('email=a%40x.test'), encoding: 'gzip' },
    { name: 'text', contentType: 'text/plain', payload: 'email=a@x.test' },
    {
      name: '__proto__ form',
      contentType: 'application/x-www-form-urlencoded',
      payload: (csrf) => `_csrf=${csrf}&__proto__=x&constructor=y&email=a%40x.test`,
    },
    {
      name: 'latin1 form with invalid UTF-8',
      contentType: 'application/x-www-form-urlencoded; charset=latin1',
      payload: (csrf) => Buffer.from(`_csrf=${csrf}&email=\xe9%FF%C0@x.test&password=p`, 'latin1'),
    },
    { name: 'XML', contentType: 'application/xml', payload: '<email/>' },
  ];

  it('a body that is not a plain form on the sign-in POST gets a 4xx page, and no error is logged', async () => {
    const form = await signInForm(t, '10.77.0.1');
    for (const body of unreadable) {
      const response = await t.inject({
        method: 'POST',
        url: '/developers/sign-in',
        remoteAddress: '10.77.0.1',
        headers: {
          'content-type': body.contentType,
          origin: portalOrigin,
          cookie: `cg_signin=${form.token}`,
          ...(body.encoding ? { 'content-encoding': body.encoding } : {}),
        },
        payload: typeof body.payload === 'function' ? body.payload(form.token) : body.payload,
      });
      if (body.payload instanceof Function) {
        // A form the portal can read, odd keys and bytes and all: an attempt with a wrong email, its form again.
        assert.equal(response.statusCode, 401, `${body.name}: ${response.body.slice(0, 200)}`);
        assert.match(response.body, /That email and password do not match a user/, body.name);
        continue;
      }
      assertPortalRefusal(response, body.name);
      assert.ok([400, 415].includes(response.statusCode), `${body.name}: ${response.statusCode}`);
      // The page's title says what is wrong, not a generic "Bad request", for a body of the wrong kind.
      if (response.statusCode === 415) assert.match(response.body, /<h1>Unsupported form<\/h1>/, body.name);
    }
    assert.deepEqual(errorLines(logs), []);
  });

  it('the same on a signed-in POST: a 4xx page with the navigation, nothing created, no error logged', async () => {
    const client = await signedInClient(t);
    for (const body of unreadable) {
      const response = await t.inject({
        method: 'POST',
        url: '/developers/api-keys',
        remoteAddress: client.ip,
        headers: {
          'content-type': body.contentType,
          origin: portalOrigin,
          cookie: `cg_session=${client.cookie}`,
          ...(body.encoding ? { 'content-encoding': body.encoding } : {}),
        },
        payload: typeof body.payload === 'function' ? body.payload('not-the-token') : body.payload,
      });
      assertPortalRefusal(response, body.name);
      assert.match(response.body, new RegExp(client.email.replace(/[.+]/g, '\\$&')), `${body.name}: the page keeps the signed-in frame`);
    }
    assert.deepEqual(errorLines(logs), []);
  });

  it('a NUL byte in the sign-in email is a 400 page naming the field, not a database error', async () => {
    const form = await signInForm(t, '10.77.0.2');
    const response = await t.inject({
      method: 'POST',
      url: '/developers/sign-in',
      remoteAddress: '10.77.0.2',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: portalOrigin, cookie: `cg_signin=${form.token}` },
      payload: `_csrf=${form.token}&email=a%00b%40x.test&password=whatever`,
    });
    assertPortalRefusal(response, 'NUL in email');
    assert.equal(response.statusCode, 400);
    assert.match(response.body, /The field email contains a NUL character/);
    assert.deepEqual(errorLines(logs), []);
  });

  it('a NUL byte in a key name, an endpoint description (create and edit) or a query parameter is a 400 page, and nothing is stored', async () => {
    const client = await signedInClient(t);
    const keysBefore = await t.services.db.selectFrom('api_keys').select('id').execute();
    const key = await client.post('/developers/api-keys', { name: 'bad\u0000name', mode: 'test', form_token: await client.keyFormToken() });
    assertPortalRefusal(key, 'key name');
    assert.equal(key.statusCode, 400);
    assert.match(key.body, /The field name contains a NUL character/);
    assert.equal((await t.services.db.selectFrom('api_keys').select('id').execute()).length, keysBefore.length);

    const oddName = await client.post('/developers/api-keys', {
      'na\u0000me': 'x',
      name: 'ok',
      mode: 'test',
      form_token: await client.keyFormToken(),
    });
    assert.equal(oddName.statusCode, 400);
    assert.match(oddName.body, /A field name contains a NUL character/);
    assert.equal((await t.services.db.selectFrom('api_keys').select('id').execute()).length, keysBefore.length);

    const endpointForm = { url: 'https://hooks.example.test/x', event_types: ['call.completed'], enabled: 'on' };
    const created = await client.post('/developers/webhooks', { ...endpointForm, description: 'a\u0000b' });
    assertPortalRefusal(created, 'endpoint description on create');
    assert.match(created.body, /The field description contains a NUL character/);
    assert.equal((await t.services.db.selectFrom('webhook_endpoints').select('id').execute()).length, 0);

    const good = await client.post('/developers/webhooks', { ...endpointForm, description: 'fine' });
    assert.equal(good.statusCode, 303, good.body.slice(0, 300));
    const [endpoint] = await t.services.db.selectFrom('webhook_endpoints').select(['id', 'description']).execute();
    const edited = await client.post(`/developers/webhooks/${endpoint!.id}`, { ...endpointForm, description: 'x\u0000' });
    assertPortalRefusal(edited, 'endpoint description on edit');
    assert.match(edited.body, /The field description contains a NUL character/);
    const [after] = await t.services.db.selectFrom('webhook_endpoints').select('description').execute();
    assert.equal(after!.description, 'fine');

    for (const url of [
      '/developers/calls?agent_id=%00',
      '/developers/requests?request_id=a%00',
      '/developers/calls?starting_after=call_%00',
    ]) {
      const response = await client.get(url);
      assertPortalRefusal(response, url);
      assert.equal(response.statusCode, 400, url);
    }
    assert.deepEqual(errorLines(logs), []);
  });
});
