import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';

const hours = (n: number) => n * 60 * 60 * 1000;

await forEachDialect('Idempotency-Key rules (spec 2.5, 4.1 rule 3)', (dialect) => {
  let t: TestApp;
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00.000Z'));
  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock } });
  });
  after(async () => t.close());

  it('the same key and body replay the first response, with Idempotent-Replayed, and start no second call', async () => {
    const first = await t.createCall(callBody(t), { idempotencyKey: 'replay-1' });
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const calls = await countCalls(t.services);
    const second = await t.createCall(callBody(t), { idempotencyKey: 'replay-1' });
    assert.equal(second.statusCode, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.deepEqual(second.json(), first.json());
    assert.equal(second.headers.location, first.headers.location);
    assert.notEqual(second.headers['x-request-id'], first.headers['x-request-id']);
    assert.equal(await countCalls(t.services), calls);
  });

  it('bodies compare as parsed JSON: key order and white space do not matter', async () => {
    const body = { agent_id: t.seed.agentId, to: '+14155550199', metadata: { a: 1, b: 'two' } };
    const first = await t.createCall(JSON.stringify(body), { idempotencyKey: 'order-1' });
    const reordered = `{ "metadata": {"b": "two",   "a": 1},\n "to": "+14155550199", "agent_id": ${JSON.stringify(t.seed.agentId)} }`;
    const second = await t.createCall(reordered, { idempotencyKey: 'order-1' });
    assert.equal(second.statusCode, 201);
    assert.equal(second.json().id, first.json().id);
  });

  it('the same key with a different body answers 409 idempotency_conflict', async () => {
    await t.createCall(callBody(t), { idempotencyKey: 'conflict-1' });
    const calls = await countCalls(t.services);
    for (const changed of [callBody(t, { to: '+14155550100' }), callBody(t, { metadata: { x: 1 } })]) {
      const res = await t.createCall(changed, { idempotencyKey: 'conflict-1' });
      assert.equal(res.statusCode, 409);
      assert.equal(res.json().error, 'idempotency_conflict');
      assert.match(res.json().request_id, /^req_/);
    }
    assert.equal(await countCalls(t.services), calls);
  });

  it('a key already used with another body is 409 even when the new body also breaks a rule; an unused key gets the 400', async () => {
    await t.createCall(callBody(t), { idempotencyKey: 'conflict-invalid' });
    const broken = [
      callBody(t, { to: '+1' }), // the pattern
      { ...callBody(t), extra: true }, // an unknown field
      callBody(t, { metadata: { pad: 'x'.repeat(6_000) } }), // over 5 KB
      [], // not an object
    ];
    for (const body of broken) {
      const reused = await t.createCall(body, { idempotencyKey: 'conflict-invalid' });
      assert.equal(reused.statusCode, 409, JSON.stringify(body).slice(0, 60));
      assert.equal(reused.json().error, 'idempotency_conflict');
      const fresh = await t.createCall(body, { idempotencyKey: `unused-${broken.indexOf(body)}` });
      assert.equal(fresh.statusCode, 400, JSON.stringify(body).slice(0, 60));
      assert.equal(fresh.json().error, 'invalid_request');
    }
    // Past the 24 hours the key is free again: the broken body gets its own 400.
    clock.advance(hours(24));
    assert.equal((await t.createCall(broken[0], { idempotencyKey: 'conflict-invalid' })).statusCode, 400);
  });

  it('keys are scoped per API key: another key may use the same value for its own call', async () => {
    const other = await t.newAccount({ agentId: t.seed.agentId });
    const mine = await t.createCall(callBody(t), { idempotencyKey: 'shared-value' });
    const theirs = await t.createCall(callBody(t), { idempotencyKey: 'shared-value', token: other.token });
    assert.equal(theirs.statusCode, 201);
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    assert.notEqual(theirs.json().id, mine.json().id);
  });

  it('refuses keys that are empty, longer than 255, non-ASCII or contain a space, before doing anything', async () => {
    const calls = await countCalls(t.services);
    for (const key of ['', 'x'.repeat(256), 'clé-ünïcode', 'has space', 'tab\there', '\u007f-del']) {
      const res = await t.createCall(callBody(t), { idempotencyKey: key });
      assert.equal(res.statusCode, 400, JSON.stringify(key));
      assert.equal(res.json().error, 'invalid_idempotency_key');
    }
    assert.equal(await countCalls(t.services), calls);
  });

  it('accepts keys of 1 and 255 printable ASCII characters', async () => {
    const all = Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i)).join('');
    for (const key of ['k', 'y'.repeat(255), all]) {
      const res = await t.createCall(callBody(t), { idempotencyKey: key });
      assert.equal(res.statusCode, 201, JSON.stringify(key));
    }
  });

  it('failures are not stored: after a 403 or a 400 the same key works for a corrected request', async () => {
    const bad = await t.createCall(callBody(t, { agent_id: 'agent_missing' }), { idempotencyKey: 'after-failure' });
    assert.equal(bad.statusCode, 403);
    const invalid = await t.createCall(callBody(t, { metadata: { ['k'.repeat(65)]: 1 } }), { idempotencyKey: 'after-failure' });
    assert.equal(invalid.statusCode, 400);
    const good = await t.createCall(callBody(t), { idempotencyKey: 'after-failure' });
    assert.equal(good.statusCode, 201);
    assert.equal(good.headers['idempotent-replayed'], undefined);
  });

  it('a failed provider call is not stored and the key is released', async () => {
    const refused = await t.createCall(callBody(t, { to: '+15005550003' }), { idempotencyKey: 'provider-refused' });
    assert.equal(refused.statusCode, 502);
    assert.equal(refused.json().error, 'provider_error');
    const row = await t.services.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('idempotency_key', '=', 'provider-refused')
      .executeTakeFirst();
    assert.equal(row, undefined);
    const again = await t.createCall(callBody(t, { to: '+15005550003' }), { idempotencyKey: 'provider-refused' });
    assert.equal(again.statusCode, 502, 'a retry runs again instead of replaying the error');
  });

  it('replays for 24 hours from the first success, then the key may start a new call', async () => {
    const first = await t.createCall(callBody(t), { idempotencyKey: 'expiry-1' });
    clock.advance(hours(24) - 1);
    const stillReplayed = await t.createCall(callBody(t), { idempotencyKey: 'expiry-1' });
    assert.equal(stillReplayed.headers['idempotent-replayed'], 'true');
    assert.equal(stillReplayed.json().id, first.json().id);
    clock.advance(1);
    const fresh = await t.createCall(callBody(t, { to: '+14155550111' }), { idempotencyKey: 'expiry-1' });
    assert.equal(fresh.statusCode, 201);
    assert.equal(fresh.headers['idempotent-replayed'], undefined);
    assert.notEqual(fresh.json().id, first.json().id);
  });

  it('requests without a key are never deduplicated', async () => {
    const a = await t.createCall(callBody(t));
    const b = await t.createCall(callBody(t));
    assert.notEqual(a.json().id, b.json().id);
  });
});
