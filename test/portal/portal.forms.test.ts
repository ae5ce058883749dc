/**
 * The portal's routes read their forms and queries through their schemas, as browsers send them: a field
 * sent twice counts once, with its first value; a lone checkbox is a list of one; the CSRF field too is
 * taken from its first value. (Reading text, not storing it: SQLite is enough.)
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { encodeForm, portalOrigin, signedInClient, type PortalClient } from '../support/portal-client.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

let t: TestApp;
let client: PortalClient;
before(async () => {
  t = await startTestApp('sqlite');
  client = await signedInClient(t);
});
after(async () => t.close());

/** A form in the given order, repeated fields and all (the client's `post` sends `_csrf` last). */
function postRaw(url: string, fields: [string, string][]) {
  return t.inject({
    method: 'POST',
    url,
    remoteAddress: client.ip,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: portalOrigin, cookie: `cg_session=${client.cookie}` },
    payload: fields.map(([name, value]) => encodeForm({ [name]: value })).join('&'),
  });
}

it('a field sent twice counts once, with its first value, in a form and in a query', async () => {
  const csrf = await client.csrf();
  const formToken = await client.keyFormToken();
  const created = await postRaw('/developers/api-keys', [
    ['_csrf', csrf],
    ['_csrf', 'not-the-token'],
    ['name', 'First name'],
    ['name', 'Second name'],
    ['mode', 'live'],
    ['mode', 'test'],
    ['form_token', formToken],
  ]);
  assert.equal(created.statusCode, 200, created.body.slice(0, 300));
  const keys = await t.services.db
    .selectFrom('api_keys')
    .select(['name', 'mode'])
    .where('name', 'in', ['First name', 'Second name'])
    .execute();
  assert.deepEqual(keys, [{ name: 'First name', mode: 'live' }]);

  const calls = await client.get('/developers/calls?status=failed&status=completed&status=initiated');
  assert.equal(calls.statusCode, 200);
  assert.match(calls.body, /<option value="failed" selected>/);
});

it('one ticked checkbox is a list of one; none is an empty list, refused with the form', async () => {
  const one = await client.post('/developers/webhooks', {
    url: 'https://hooks.example.test/one',
    event_types: 'call.failed',
    enabled: 'on',
  });
  assert.equal(one.statusCode, 303, one.body.slice(0, 300));
  const [endpoint] = await t.services.db.selectFrom('webhook_endpoints').select('event_types').execute();
  assert.deepEqual(JSON.parse(endpoint!.event_types), ['call.failed']);

  const none = await client.post('/developers/webhooks', { url: 'https://hooks.example.test/none', enabled: 'on' });
  assert.equal(none.statusCode, 400);
  assert.match(none.body, /Choose at least one event type\./);
});
