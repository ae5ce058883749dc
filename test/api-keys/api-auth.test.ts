import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { createApiKey, revokeApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';

/** The authorization checks every /v1 route must pass (STYLE.md rule 11: shared auth checks). */
const protectedRoutes = [
  { method: 'POST' as const, url: '/v1/calls', body: true },
  { method: 'GET' as const, url: '/v1/calls/call_conv_unknown', body: false },
];

await forEachDialect('API key authentication', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const expect401 = async (authorization: string | undefined, route = protectedRoutes[0]!) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (authorization !== undefined) headers.authorization = authorization;
    const res = await t.inject({
      method: route.method,
      url: route.url,
      headers,
      ...(route.body ? { payload: JSON.stringify(callBody(t)) } : {}),
    });
    assert.equal(res.statusCode, 401, `${authorization} on ${route.method} ${route.url}`);
    const body = res.json();
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message', 'request_id', 'retryable']);
    assert.equal(body.error, 'unauthorized');
    assert.equal(body.request_id, res.headers['x-request-id']);
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="callgate"');
    return body.message as string;
  };

  for (const route of protectedRoutes) {
    describe(`${route.method} ${route.url}`, () => {
      it('answers 401 alike for a missing, malformed, unknown or revoked key', async () => {
        const revoked = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'old', mode: 'live' });
        await revokeApiKey(t.services.db, t.services.clock, revoked.id);
        const unknown = `cg_live_${'0'.repeat(64)}`;
        const messages = new Set<string>();
        for (const header of [
          undefined,
          '',
          'Bearer',
          'Bearer ',
          `Basic ${Buffer.from('a:b').toString('base64')}`,
          t.seed.token, // no scheme
          `Bearer  ${t.seed.token}`, // two spaces
          `Bearer ${t.seed.token} `, // trailing space (through inject; over a socket Node trims header values)
          `Bearer ${t.seed.token}x`,
          `Bearer ${t.seed.token.toUpperCase()}`,
          `Bearer ${t.seed.token.slice(0, -1)}`,
          `Token ${t.seed.token}`,
          `Bearer ${unknown}`,
          `Bearer cg_prod_${'a'.repeat(64)}`,
          `Bearer ${revoked.token}`,
        ]) {
          messages.add(await expect401(header, route));
        }
        assert.equal(messages.size, 1, 'every 401 says the same thing');
      });
    });
  }

  it('a valid key passes, with any case of the scheme word', async () => {
    const res = await t.createCall(callBody(t), { headers: { authorization: `bearer ${t.seed.token}` }, token: null });
    assert.equal(res.statusCode, 201);
  });

  it('revocation holds from the very next request', async () => {
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'soon revoked', mode: 'live' });
    assert.equal((await t.createCall(callBody(t), { token: key.token })).statusCode, 201);
    await revokeApiKey(t.services.db, t.services.clock, key.id);
    const calls = await countCalls(t.services);
    await expect401(`Bearer ${key.token}`);
    assert.equal(await countCalls(t.services), calls, 'no call placed with a revoked key');
  });

  it('a request with a valid key and an unknown agent answers 403 agent_not_found (spec 5.7), naming agent_id', async () => {
    const res = await t.createCall(callBody(t, { agent_id: 'agent_does_not_exist' }));
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error, 'agent_not_found');
    assert.equal(res.json().param, 'agent_id');
  });

  it('two Authorization headers are 401, even when both hold valid keys', async () => {
    const other = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'second', mode: 'live' });
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const calls = await countCalls(t.services);
    const answer = await new Promise<{ status: number; body: string; challenge: unknown }>((resolve, reject) => {
      const request = http.request(`${address}/v1/calls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
      });
      // An array value goes out as one header line per item: two Authorization headers.
      request.setHeader('authorization', [`Bearer ${t.seed.token}`, `Bearer ${other.token}`]);
      request.on('response', (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body, challenge: response.headers['www-authenticate'] }));
      });
      request.on('error', reject);
      request.end(JSON.stringify(callBody(t)));
    });
    assert.equal(answer.status, 401, answer.body);
    assert.equal(JSON.parse(answer.body).error, 'unauthorized');
    assert.equal(answer.challenge, 'Bearer realm="callgate"');
    assert.equal(await countCalls(t.services), calls);
  });

  it("an agent of another account is not found, and another account's call is not either", async () => {
    const other = await t.newAccount({ agentId: 'agent_other_accounts_bot' });
    const res = await t.createCall(callBody(t, { agent_id: other.agentId }));
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error, 'agent_not_found');

    const theirs = await t.createCall({ agent_id: other.agentId, to: '+14155550123' }, { token: other.token });
    assert.equal(theirs.statusCode, 201);
    const peek = await t.inject({
      method: 'GET',
      url: `/v1/calls/${theirs.json().id}`,
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.equal(peek.statusCode, 404);
    assert.equal(peek.json().error, 'not_found');
    const own = await t.inject({
      method: 'GET',
      url: `/v1/calls/${theirs.json().id}`,
      headers: { authorization: `Bearer ${other.token}` },
    });
    assert.equal(own.statusCode, 200);
  });

  it('keys are stored only as a hash and a display prefix', async () => {
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'hash check', mode: 'test' });
    assert.match(key.token, /^cg_test_[0-9a-f]{64}$/);
    assert.equal(key.prefix, key.token.slice(0, 12));
    const row = await t.services.db.selectFrom('api_keys').selectAll().where('id', '=', key.id).executeTakeFirstOrThrow();
    const stored = JSON.stringify(row);
    assert.ok(!stored.includes(key.token.slice(12)), 'no part of the secret beyond the prefix is stored');
    assert.match(row.token_hash, /^[0-9a-f]{64}$/);
  });

  it('keeps last_used_at without a write on every request', async () => {
    const key = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'usage', mode: 'live' });
    const lastUsed = async () =>
      (await t.services.db.selectFrom('api_keys').select('last_used_at').where('id', '=', key.id).executeTakeFirstOrThrow()).last_used_at;
    assert.equal(await lastUsed(), null);
    await t.createCall(callBody(t), { token: key.token });
    const first = await lastUsed();
    assert.ok(first);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await t.createCall(callBody(t), { token: key.token });
    assert.equal(await lastUsed(), first, 'a second use within a minute does not write again');
  });
});
