/**
 * Storing calls: a created call and the completion of its idempotency key are one transaction (the call's
 * insert and completeKey), both or neither; ending calls in a batch (recordOutcomes) ends each once, with
 * its event and deliveries.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Db } from '../../src/db/database.js';
import { insertCall } from '../../src/features/calls/calls.repository.js';
import { recordOutcome, recordOutcomes } from '../../src/features/calls/calls.service.js';
import type { CallRow } from '../../src/features/calls/calls.tables.js';
import { insertInFlight } from '../../src/features/idempotency/idempotency.repository.js';
import { completeKey, HeldKey } from '../../src/features/idempotency/idempotency.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

await forEachDialect('Storing a call with its idempotency key', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const at = '2030-01-01T00:00:00.000Z';
  const scope = (key: string) => ({ apiKeyId: t.seed.keyId, route: 'POST /v1/calls', key });
  async function holdKey(key: string, owner: string): Promise<void> {
    assert.ok(
      await insertInFlight(t.services.db, {
        api_key_id: t.seed.keyId,
        route: 'POST /v1/calls',
        idempotency_key: key,
        request_hash: 'hash',
        state: 'in_progress',
        owner,
        response_status: null,
        response_body: null,
        response_headers: null,
        locked_until: '2030-01-01T00:01:00.000Z',
        expires_at: null,
        created_at: at,
      }),
    );
  }
  async function callRow(id: string): Promise<CallRow> {
    const agent = await t.services.db.selectFrom('agents').selectAll().where('agent_id', '=', t.seed.agentId).executeTakeFirstOrThrow();
    return {
      id,
      account_id: t.seed.accountId,
      api_key_id: t.seed.keyId,
      agent_id: agent.agent_id,
      agent_ref: agent.id,
      mode: 'live',
      provider: 'simulator',
      provider_conversation_id: id.slice('call_'.length),
      to_number: '+14155550123',
      metadata: '{"a":1}',
      status: 'initiated',
      created_at: at,
      updated_at: at,
      next_check_at: at,
      started_at: null,
      ended_at: null,
      duration_seconds: null,
      transcript_summary: null,
      failure_reason: null,
      failure_message: null,
      failed_at: null,
      batch_id: null,
      reference: null,
      dial_id: null,
      found_after_lost_answer: 0,
      analysis_successful: null,
      analysis_data: null,
      cancel_requested_at: null,
      provider_control: null,
    };
  }
  const insertCallCompletingKey = (db: Db, row: CallRow, key: HeldKey) =>
    db.transaction().execute(async (trx) => {
      await insertCall(trx, row);
      await completeKey(trx, key, response);
    });
  const heldKey = (key: string, owner: string) => new HeldKey(t.services.calls, scope(key), owner);
  const response = { status: 201, body: { id: 'call_x' }, headers: {} };
  const record = (key: string) =>
    t.services.db
      .selectFrom('idempotency_keys')
      .select(['state', 'response_status', 'response_body', 'expires_at'])
      .where('idempotency_key', '=', key)
      .executeTakeFirstOrThrow();

  it('stores the call and completes the key with the response', async () => {
    await holdKey('store-1', 'owner-1');
    const row = await callRow('call_store_one');
    const key = heldKey('store-1', 'owner-1');
    await insertCallCompletingKey(t.services.db, row, key);
    assert.equal(key.completed, true);
    const stored = await t.services.db.selectFrom('calls').selectAll().where('id', '=', row.id).executeTakeFirstOrThrow();
    assert.deepEqual(stored, row);
    const before = Date.now();
    const { expires_at: expiresAt, ...stored1 } = await record('store-1');
    assert.deepEqual(stored1, { state: 'completed', response_status: 201, response_body: '{"id":"call_x"}' });
    // Replayed for 24 hours from the success.
    const lifetimeMs = Date.parse(expiresAt!) - before;
    assert.ok(lifetimeMs > 24 * 60 * 60 * 1000 - 60_000 && lifetimeMs <= 24 * 60 * 60 * 1000, expiresAt!);
  });

  it('a call that cannot be stored leaves the key in flight (for its release), and nothing else changes', async () => {
    await holdKey('store-2', 'owner-2');
    const row = await callRow('call_store_one'); // the id is taken
    await assert.rejects(insertCallCompletingKey(t.services.db, row, heldKey('store-2', 'owner-2')), /duplicate key|UNIQUE constraint/);
    assert.deepEqual(await record('store-2'), { state: 'in_progress', response_status: null, response_body: null, expires_at: null });
  });

  it('a key held by another request is not completed by this one', async () => {
    await holdKey('store-3', 'owner-3');
    await insertCallCompletingKey(t.services.db, await callRow('call_store_three'), heldKey('store-3', 'someone-else'));
    assert.equal((await record('store-3')).state, 'in_progress');
  });
});

await forEachDialect('Ending calls in a batch', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  it('one transaction ends each call once, with its event and a delivery per subscribed endpoint of its own account', async () => {
    const other = await t.newAccount({ agentId: 'agent_batch_other' });
    const clock = t.services.clock;
    const hook = (accountId: string, events?: string[]) =>
      createEndpoint(t.services.db, clock, true, { accountId, url: 'http://127.0.0.1:9/hook', ...(events ? { eventTypes: events } : {}) });
    const seedAll = await hook(t.seed.accountId);
    const seedFailedOnly = await hook(t.seed.accountId, ['call.failed']);
    const otherAll = await hook(other.accountId);
    const place = async (token: string, agentId: string) =>
      String((await t.createCall({ agent_id: agentId, to: '+14155550123' }, { token })).json().id);
    const a = await place(t.seed.token, t.seed.agentId);
    const b = await place(t.seed.token, t.seed.agentId);
    const c = await place(other.token, 'agent_batch_other');
    const done = await place(t.seed.token, t.seed.agentId);
    assert.deepEqual(
      await recordOutcome(t.services.db, clock, done, { status: 'failed', reason: 'busy', message: 'Busy.', failedAt: new Date() }),
      {
        ended: true,
        deliveries: 2,
      },
    );

    const startedAt = new Date('2030-01-01T00:00:00.000Z');
    const completed = {
      status: 'completed',
      startedAt,
      endedAt: new Date(startedAt.getTime() + 42_000),
      durationSeconds: 42,
      transcriptSummary: 'Ada said “oui”.',
    } as const;
    const failed = { status: 'failed', reason: 'no_answer', message: null, failedAt: startedAt } as const;
    const results = await recordOutcomes(t.services.db, clock, [
      { callId: a, outcome: completed },
      { callId: done, outcome: completed },
      { callId: b, outcome: failed },
      { callId: c, outcome: completed },
      { callId: a, outcome: failed },
      { callId: 'call_unknown', outcome: completed },
    ]);
    assert.deepEqual(results, [
      { ended: true, deliveries: 1 },
      { ended: false, deliveries: 0 },
      { ended: true, deliveries: 2 },
      { ended: true, deliveries: 1 },
      { ended: false, deliveries: 0 },
      { ended: false, deliveries: 0 },
    ]);

    const call = (id: string) => t.services.db.selectFrom('calls').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    assert.deepEqual(
      await call(a).then((row) => [
        row.status,
        row.started_at,
        row.ended_at,
        row.duration_seconds,
        row.transcript_summary,
        row.failure_reason,
        row.next_check_at,
      ]),
      ['completed', '2030-01-01T00:00:00.000Z', '2030-01-01T00:00:42.000Z', 42, 'Ada said “oui”.', null, null],
    );
    assert.deepEqual(
      await call(b).then((row) => [
        row.status,
        row.failure_reason,
        row.failure_message,
        row.failed_at,
        row.duration_seconds,
        row.next_check_at,
      ]),
      ['failed', 'no_answer', null, '2030-01-01T00:00:00.000Z', null, null],
    );
    assert.equal((await call(done)).status, 'failed', 'an ended call keeps its first outcome');

    const deliveriesOf = async (callId: string) => {
      const events = await t.services.db.selectFrom('webhook_events').selectAll().where('call_id', '=', callId).execute();
      const rows = await t.services.db
        .selectFrom('webhook_deliveries')
        .select(['endpoint_id', 'account_id', 'status'])
        .where('event_id', 'in', events.length ? events.map((event) => event.id) : ['none'])
        .orderBy('endpoint_id')
        .execute();
      return { types: events.map((event) => event.type), payloads: events.map((event) => JSON.parse(event.payload)), rows };
    };
    const ofA = await deliveriesOf(a);
    assert.deepEqual(ofA.types, ['call.completed']);
    assert.equal(ofA.payloads[0].data.transcript_summary, 'Ada said “oui”.');
    assert.deepEqual(ofA.rows, [{ endpoint_id: seedAll.id, account_id: t.seed.accountId, status: 'pending' }]);
    const ofB = await deliveriesOf(b);
    assert.deepEqual(ofB.types, ['call.failed']);
    assert.deepEqual(ofB.rows.map((row) => row.endpoint_id).sort(), [seedAll.id, seedFailedOnly.id].sort());
    const ofC = await deliveriesOf(c);
    assert.deepEqual(ofC.rows, [{ endpoint_id: otherAll.id, account_id: other.accountId, status: 'pending' }]);
    assert.deepEqual((await deliveriesOf(done)).types, ['call.failed']);
  });
});
