/**
 * The Cancel button of the portal's call page, on SQLite and PostgreSQL: shown while a call is under way,
 * it leads to a page that asks first; confirming asks the provider (the simulator) through the API's cancel,
 * and the call then ends `cancelled`; without a confirmation (no CSRF token) nothing happens; another
 * account's call is a 404; an ended call shows no button, and a cancel of it says why on its page (409).
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { portalClient, signedInClient, type PortalClient } from '../support/portal-client.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

await forEachDialect('Portal call page: cancelling a call', (dialect) => {
  let t: TestApp;
  let client: PortalClient;
  before(async () => {
    // Calls of a minute: each is under way until it is cancelled.
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '60000' }, startMonitor: true });
    client = await signedInClient(t);
  });
  after(async () => t.close());

  const read = async (id: string) =>
    (await t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: { authorization: `Bearer ${t.seed.token}` } })).json();

  it('asks first, then cancels: the call ends failed / cancelled, and the page says the provider agreed', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const page = await client.get(`/developers/calls/${created.id}`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, new RegExp(`href="/developers/calls/${created.id}/cancel"`));
    const confirm = await client.get(`/developers/calls/${created.id}/cancel`);
    assert.equal(confirm.statusCode, 200);
    assert.match(confirm.body, /Cancel the call to \+14155550123\?/);

    const refused = await client.post(`/developers/calls/${created.id}/cancel`, {}, { csrf: null });
    assert.equal(refused.statusCode, 403);
    assert.equal((await read(created.id)).cancel_requested_at, undefined);

    const done = await client.post(`/developers/calls/${created.id}/cancel`, {});
    assert.equal(done.statusCode, 303);
    assert.equal(done.headers.location, `/developers/calls/${created.id}?notice=call_cancelling`);
    const ended = await until('the call to end', async () => {
      const call = await read(created.id);
      return call.status === 'initiated' ? undefined : call;
    });
    assert.equal(ended.failure_reason, 'cancelled');
    const after = await client.get(`/developers/calls/${created.id}`);
    assert.doesNotMatch(after.body, /Cancel call…/);
    const again = await client.post(`/developers/calls/${created.id}/cancel`, {});
    assert.equal(again.statusCode, 409);
    assert.match(again.body, /call_already_ended/);
  });

  it("another account's call is a 404, and nothing is asked", async () => {
    const created = (await t.createCall(callBody(t))).json();
    const other = await signedInClient(t, await t.newAccount({ agentId: 'agent_portal_cancel_other' }));
    assert.equal((await other.get(`/developers/calls/${created.id}/cancel`)).statusCode, 404);
    assert.equal((await other.post(`/developers/calls/${created.id}/cancel`, {})).statusCode, 404);
    const signedOut = await portalClient(t).get(`/developers/calls/${created.id}/cancel`);
    assert.equal(signedOut.statusCode, 303);
    assert.equal((await read(created.id)).cancel_requested_at, undefined);
  });
});
