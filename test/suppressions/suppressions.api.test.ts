/**
 * The suppression list through the real app, on both databases: add (201, then 200 for the same number),
 * read, list in cursor pages, remove (204, then 404); its validation errors; accounts never see each
 * other's entries; test-mode and live keys of one account share the list; and POST /v1/calls to a
 * listed number is refused `403 number_suppressed` without asking the provider, its Idempotency-Key freed.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { forEachDialect } from '../support/dialects.js';
import { createFakeProvider } from '../support/fake-voice-provider.js';
import { deleteSuppression, getSuppressions, postSuppression } from '../support/suppression-client.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('The suppression list API', (dialect) => {
  const provider = createFakeProvider();
  // Moved on a millisecond per entry where the order of the list is asserted (entries of one millisecond
  // have no order between them).
  const clock = new ManualClock();
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock, providers: createProviderRegistry({ simulator: provider }) } });
  });
  after(async () => t.close());
  beforeEach(async () => {
    provider.reset();
    await t.services.db.deleteFrom('suppressions').execute();
  });

  it('adds a number (201 with Location), answers the same number again with the entry there (200), and reads it', async () => {
    const created = await postSuppression(t, { to: '+14155550100', reason: 'Asked not to be called (ticket 881)' });
    assert.equal(created.statusCode, 201, created.body);
    const entry = created.json();
    assert.deepEqual(Object.keys(entry), ['id', 'to', 'reason', 'created_at']);
    assert.match(entry.id, /^sup_[0-9a-z]{26}$/);
    assert.equal(entry.to, '+14155550100');
    assert.equal(entry.reason, 'Asked not to be called (ticket 881)');
    assert.ok(!Number.isNaN(Date.parse(entry.created_at)));
    assert.equal(created.headers.location, '/v1/suppressions/%2B14155550100');

    const again = await postSuppression(t, { to: '+14155550100', reason: 'another reason' });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), entry, 'the entry as it was: a second reason does not replace the first');

    const read = await t.inject({
      method: 'GET',
      url: created.headers.location as string,
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(read.statusCode, 200);
    assert.deepEqual(read.json(), entry);

    const noReason = await postSuppression(t, { to: '+442071838750' });
    assert.equal(noReason.statusCode, 201);
    assert.equal(noReason.json().reason, null);
  });

  it('refuses what POST /v1/calls refuses in `to`, with the same error, and bounds the reason', async () => {
    const call = await t.createCall(callBody(t, { to: '4155550100' }));
    const refused = await postSuppression(t, { to: '4155550100' });
    assert.equal(refused.statusCode, 400);
    assert.equal(refused.json().error, 'invalid_request');
    assert.equal(refused.json().param, 'to');
    assert.equal(refused.json().message, call.json().message, 'the wording of POST /v1/calls');
    assert.match(refused.json().request_id, /^req_/);

    const cases: [unknown, string][] = [
      [{}, 'to'],
      [{ to: 14155550100 }, 'to'],
      [{ to: '+14155550100', reason: '' }, 'reason'],
      [{ to: '+14155550100', reason: 'x'.repeat(501) }, 'reason'],
      [{ to: '+14155550100', reason: 7 }, 'reason'],
      [{ to: '+14155550100', mode: 'live' }, 'mode'],
    ];
    for (const [body, param] of cases) {
      const res = await postSuppression(t, body);
      assert.equal(res.statusCode, 400, JSON.stringify(body));
      assert.equal(res.json().error, 'invalid_request', JSON.stringify(body));
      assert.equal(res.json().param, param, JSON.stringify(body));
    }
    const longest = await postSuppression(t, { to: '+14155550100', reason: 'x'.repeat(500) });
    assert.equal(longest.statusCode, 201);
    const invalidJson = await postSuppression(t, '{"to":');
    assert.equal(invalidJson.json().error, 'invalid_json');
    assert.equal((await getSuppressions(t)).json().data.length, 1, 'nothing else was added');
  });

  it('the same number sent several times at once makes one entry: one 201, the others 200 with it', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => postSuppression(t, { to: '+14155550105' })));
    const statuses = answers.map((res) => res.statusCode).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 201]);
    const ids = new Set(answers.map((res) => res.json().id));
    assert.equal(ids.size, 1, 'every answer is the one entry');
    assert.equal((await getSuppressions(t)).json().data.length, 1);
  });

  it('takes an Idempotency-Key as POST /v1/calls does: a replay, and 409 for another body', async () => {
    const first = await postSuppression(t, { to: '+14155550101' }, { idempotencyKey: 'sup-key-1' });
    assert.equal(first.statusCode, 201);
    const replay = await postSuppression(t, { to: '+14155550101' }, { idempotencyKey: 'sup-key-1' });
    assert.equal(replay.statusCode, 201);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), first.json());
    const conflict = await postSuppression(t, { to: '+14155550102' }, { idempotencyKey: 'sup-key-1' });
    assert.equal(conflict.statusCode, 409);
    assert.equal(conflict.json().error, 'idempotency_conflict');
    const invalid = await postSuppression(t, { to: '+14155550102' }, { idempotencyKey: 'has space' });
    assert.equal(invalid.json().error, 'invalid_idempotency_key');
    assert.equal((await getSuppressions(t)).json().data.length, 1);
  });

  it('lists the entries newest first in cursor pages, and refuses a bad limit or cursor', async () => {
    const numbers = ['+14155550110', '+14155550111', '+14155550112', '+14155550113', '+14155550114'];
    for (const to of numbers) {
      clock.advance(1);
      assert.equal((await postSuppression(t, { to })).statusCode, 201);
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < 3; page++) {
      const res = await getSuppressions(t, `?limit=2${after ? `&starting_after=${after}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const body = res.json() as { data: { id: string; to: string }[]; has_more: boolean };
      seen.push(...body.data.map((entry) => entry.to));
      assert.equal(body.has_more, page < 2);
      after = body.data.at(-1)?.id;
    }
    assert.deepEqual(seen, [...numbers].reverse());
    assert.equal((await getSuppressions(t)).json().data.length, 5, 'default limit 20');

    for (const query of ['?limit=0', '?limit=101', '?limit=ten', '?starting_after=sup_unknown', '?colour=red']) {
      const res = await getSuppressions(t, query);
      assert.equal(res.statusCode, 400, query);
      assert.equal(res.json().error, 'invalid_request', query);
    }
  });

  it('removes a number (204), then answers 404; a malformed number in the path is a 400', async () => {
    await postSuppression(t, { to: '+14155550120' });
    const removed = await deleteSuppression(t, '+14155550120');
    assert.equal(removed.statusCode, 204);
    assert.equal(removed.body, '');
    const again = await deleteSuppression(t, '+14155550120');
    assert.equal(again.statusCode, 404);
    assert.equal(again.json().error, 'not_found');
    const read = await t.inject({
      method: 'GET',
      url: '/v1/suppressions/%2B14155550120',
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(read.statusCode, 404);

    // A + written as such in a path is a plus (only a query string reads it as a space).
    await postSuppression(t, { to: '+14155550121' });
    const plain = await t.inject({
      method: 'DELETE',
      url: '/v1/suppressions/+14155550121',
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(plain.statusCode, 204);

    for (const path of ['14155550120', '%2B0155', 'abc', '%2B1415%00555']) {
      const res = await t.inject({
        method: 'DELETE',
        url: `/v1/suppressions/${path}`,
        headers: { authorization: `Bearer ${t.seed.token}` },
      });
      assert.equal(res.statusCode, 400, path);
      assert.equal(res.json().error, 'invalid_request', path);
      assert.equal(res.json().param, 'to', path);
    }
    const put = await t.inject({
      method: 'PUT',
      url: '/v1/suppressions/%2B14155550120',
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(put.statusCode, 405);
    assert.equal(put.headers.allow, 'GET, DELETE, HEAD');
    const unauthenticated = await t.inject({ method: 'GET', url: '/v1/suppressions' });
    assert.equal(unauthenticated.statusCode, 401);
  });

  it("keeps accounts apart: another account's entries are invisible, and its list is its own", async () => {
    const other = await t.newAccount({ agentId: 'agent_other_suppressions' });
    await postSuppression(t, { to: '+14155550130' });
    const theirs = await postSuppression(t, { to: '+14155550131' }, { token: other.token });
    assert.equal(theirs.statusCode, 201);

    assert.deepEqual(
      (await getSuppressions(t, '', other.token)).json().data.map((entry: { to: string }) => entry.to),
      ['+14155550131'],
    );
    const readOther = await t.inject({
      method: 'GET',
      url: '/v1/suppressions/%2B14155550130',
      headers: { authorization: `Bearer ${other.token}` },
    });
    assert.equal(readOther.statusCode, 404);
    assert.equal((await deleteSuppression(t, '+14155550130', other.token)).statusCode, 404);
    const cursor = await getSuppressions(t, `?starting_after=${theirs.json().id}`);
    assert.equal(cursor.statusCode, 400, "another account's entry is no cursor");
    // Their number is not ours to refuse, and ours not theirs.
    assert.equal((await t.createCall(callBody(t, { to: '+14155550131' }))).statusCode, 201);
    const otherCall = await t.createCall({ agent_id: other.agentId, to: '+14155550130' }, { token: other.token });
    assert.equal(otherCall.statusCode, 201);
    assert.equal((await postSuppression(t, { to: '+14155550131' })).statusCode, 201, 'the same number on two lists');
  });

  it('one list for both modes: an entry made with a test key refuses live calls, and the other way round', async () => {
    const testKey = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    assert.equal((await postSuppression(t, { to: '+14155550140' }, { token: testKey.token })).statusCode, 201);
    clock.advance(1);
    assert.equal((await postSuppression(t, { to: '+14155550141' })).statusCode, 201);
    const listed = (token: string) => getSuppressions(t, '', token).then((res) => res.json().data.map((entry: { to: string }) => entry.to));
    assert.deepEqual(await listed(testKey.token), ['+14155550141', '+14155550140']);
    assert.deepEqual(await listed(t.seed.token), ['+14155550141', '+14155550140']);

    const live = await t.createCall(callBody(t, { to: '+14155550140' }));
    assert.equal(live.statusCode, 403);
    assert.equal(live.json().error, 'number_suppressed');
    const test = await t.createCall(callBody(t, { to: '+14155550141' }), { token: testKey.token });
    assert.equal(test.statusCode, 403);
    assert.equal(test.json().error, 'number_suppressed');
    assert.equal(provider.attempts, 0);
    // Either mode's key removes an entry of the one list.
    assert.equal((await deleteSuppression(t, '+14155550140', testKey.token)).statusCode, 204);
    assert.equal((await t.createCall(callBody(t, { to: '+14155550140' }))).statusCode, 201);
  });

  it('POST /v1/calls to a listed number: 403 number_suppressed, no provider call, and the key freed for a retry', async () => {
    await postSuppression(t, { to: '+14155550150', reason: 'opted out' });
    const callsBefore = await countCalls(t.services);
    const refused = await t.createCall(callBody(t, { to: '+14155550150' }), { idempotencyKey: 'call-suppressed-1' });
    assert.equal(refused.statusCode, 403, refused.body);
    const body = refused.json();
    assert.equal(body.error, 'number_suppressed');
    assert.equal(body.param, 'to');
    assert.match(body.message, /\+14155550150 is on this account's suppression list/);
    assert.match(body.message, /DELETE \/v1\/suppressions\/%2B14155550150/);
    assert.match(body.request_id, /^req_/);
    assert.equal(provider.attempts, 0, 'the provider was not asked');
    assert.equal(await countCalls(t.services), callsBefore);

    // The same key again while listed: refused anew (a failure stores nothing), still no provider call.
    const stillRefused = await t.createCall(callBody(t, { to: '+14155550150' }), { idempotencyKey: 'call-suppressed-1' });
    assert.equal(stillRefused.statusCode, 403);
    assert.equal(stillRefused.headers['idempotent-replayed'], undefined);
    assert.equal(provider.attempts, 0);

    assert.equal((await deleteSuppression(t, '+14155550150')).statusCode, 204);
    const placed = await t.createCall(callBody(t, { to: '+14155550150' }), { idempotencyKey: 'call-suppressed-1' });
    assert.equal(placed.statusCode, 201, placed.body);
    assert.equal(placed.headers['idempotent-replayed'], undefined);
    assert.equal(provider.attempts, 1);
    const replay = await t.createCall(callBody(t, { to: '+14155550150' }), { idempotencyKey: 'call-suppressed-1' });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(provider.attempts, 1);

    // An unknown agent is named first: the list is not revealed to a request that names no agent of ours.
    await postSuppression(t, { to: '+14155550151' });
    const noAgent = await t.createCall({ agent_id: 'agent_nobody', to: '+14155550151' });
    assert.equal(noAgent.json().error, 'agent_not_found');
  });

  it('logs its requests in the request log like every API request', async () => {
    const res = await postSuppression(t, { to: '+14155550160' }, { idempotencyKey: 'logged-1' });
    await t.services.requestLog.flush();
    const row = await t.services.db
      .selectFrom('request_logs')
      .selectAll()
      .where('id', '=', res.headers['x-request-id'] as string)
      .executeTakeFirstOrThrow();
    assert.equal(row.method, 'POST');
    assert.equal(row.path, '/v1/suppressions');
    assert.equal(row.status, 201);
    assert.equal(row.idempotency_key, 'logged-1');
    assert.equal(row.account_id, t.seed.accountId);
  });
});
