/**
 * GET /v1/calls's filters (to, batch_id, reference, created_after, created_before) alone and together, on
 * the cursor's pages, refused with the parameter named when malformed, never reaching another account's or
 * the other mode's calls; and `livemode` on the call, batch and recipient resources of each mode.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { addLivemodeToStoredAnswers } from '../../src/db/migrations/0025-call-filters.js';
import { assertErrorShape } from '../support/api-errors.js';
import { apiGet, createBatch, numbers } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import { appFor, type SeededAccount, type TestApp } from '../support/test-app.js';

const idsOf = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((call) => call.id);

await forEachDialect('GET /v1/calls filters', (dialect) => {
  const t: TestApp = appFor(dialect);
  let owner: SeededAccount;
  /** The calls by name, each with a known time, number, batch and reference; newest is `e`. */
  const calls: Record<string, string> = {};
  const get = (query: string, token = owner.token) => apiGet(t, `/v1/calls?${query}`, token);

  before(async () => {
    owner = await t.newAccount({ agentId: 'agent_filters' });
    const plan = [
      { name: 'a', to: '+14155550101', at: '2026-03-01T10:00:00.000Z', batch: null, reference: null },
      { name: 'b', to: '+14155550102', at: '2026-03-01T11:00:00.000Z', batch: 'batch_f1', reference: 'crm-1' },
      { name: 'c', to: '+14155550101', at: '2026-03-01T12:00:00.000Z', batch: 'batch_f1', reference: 'crm-2' },
      { name: 'd', to: '+14155550101', at: '2026-03-01T13:00:00.000Z', batch: 'batch_f2', reference: 'crm-1' },
      { name: 'e', to: '+14155550103', at: '2026-03-01T14:00:00.000Z', batch: null, reference: null },
    ];
    for (const call of plan) {
      const res = await t.createCall({ agent_id: owner.agentId, to: call.to }, { token: owner.token });
      assert.equal(res.statusCode, 201, res.body);
      calls[call.name] = res.json().id;
      await t.services.db
        .updateTable('calls')
        .set({ created_at: call.at, batch_id: call.batch, reference: call.reference })
        .where('id', '=', res.json().id)
        .execute();
    }
    // Calls that share every value filtered on but are not the owner's key's to see: another account's, and
    // the owner's of test mode.
    const other = await t.newAccount({ agentId: 'agent_filters' });
    const test = await createApiKey(t.services.db, t.services.clock, { accountId: owner.accountId, name: 'test', mode: 'test' });
    for (const token of [other.token, test.token]) {
      const res = await t.createCall({ agent_id: 'agent_filters', to: '+14155550101' }, { token });
      assert.equal(res.statusCode, 201, res.body);
      await t.services.db
        .updateTable('calls')
        .set({ created_at: '2026-03-01T12:30:00.000Z', batch_id: 'batch_f1', reference: 'crm-1' })
        .where('id', '=', res.json().id)
        .execute();
    }
  });

  it('filters by each parameter alone', async () => {
    const { a, b, c, d, e } = calls as Record<string, string>;
    const cases: [string, string[]][] = [
      ['to=%2B14155550101', [d!, c!, a!]],
      ['to=%2B14155550103', [e!]],
      ['to=%2B14155550199', []],
      ['batch_id=batch_f1', [c!, b!]],
      ['batch_id=batch_none', []],
      ['reference=crm-1', [d!, b!]],
      ['created_after=2026-03-01T12:00:00Z', [e!, d!]],
      ['created_before=2026-03-01T12:00:00Z', [b!, a!]],
      // Offsets are times too: 13:00+01:00 is 12:00Z, and the bounds are exclusive.
      ['created_after=2026-03-01T13:00:00%2B01:00', [e!, d!]],
    ];
    for (const [query, expected] of cases) {
      const res = await get(query);
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      assert.deepEqual(idsOf(res), expected, query);
      assert.equal(res.json().has_more, false, query);
    }
  });

  it('combines filters: a call must match each of them', async () => {
    const { a, b, c, d } = calls as Record<string, string>;
    const cases: [string, string[]][] = [
      ['to=%2B14155550101&created_after=2026-03-01T10:00:00Z&created_before=2026-03-01T13:00:00Z', [c!]],
      ['to=%2B14155550101&created_after=2026-03-01T09:00:00Z', [d!, c!, a!]],
      ['batch_id=batch_f1&reference=crm-1', [b!]],
      ['batch_id=batch_f2&to=%2B14155550101', [d!]],
      ['reference=crm-1&created_before=2026-03-01T12:00:00Z', [b!]],
      [`to=%2B14155550101&agent_id=${owner.agentId}&status=initiated`, [d!, c!, a!]],
      ['to=%2B14155550101&status=failed', []],
      ['created_after=2026-03-01T14:00:00Z&created_before=2026-03-01T10:00:00Z', []],
    ];
    for (const [query, expected] of cases) {
      const res = await get(query);
      assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
      assert.deepEqual(idsOf(res), expected, query);
    }
  });

  it('pages through a filtered list with starting_after, the filters kept', async () => {
    const { a, c, d } = calls as Record<string, string>;
    const first = await get('to=%2B14155550101&limit=2');
    assert.deepEqual(idsOf(first), [d, c]);
    assert.equal(first.json().has_more, true);
    const second = await get(`to=%2B14155550101&limit=2&starting_after=${c}`);
    assert.deepEqual(idsOf(second), [a]);
    assert.equal(second.json().has_more, false);
    const ranged = await get(`created_after=2026-03-01T10:00:00Z&limit=1&starting_after=${d}`);
    assert.deepEqual(idsOf(ranged), [c]);
    assert.equal(ranged.json().has_more, true);
  });

  it("never shows another account's calls, nor the other mode's, whatever the filters", async () => {
    const shown = new Set(Object.values(calls));
    for (const query of ['to=%2B14155550101', 'batch_id=batch_f1', 'reference=crm-1', 'created_after=2026-03-01T12:15:00Z']) {
      for (const id of idsOf(await get(query))) assert.ok(shown.has(id), `${query} showed ${id}`);
    }
    const stranger = await t.newAccount({ agentId: 'agent_stranger' });
    assert.deepEqual(idsOf(await get('batch_id=batch_f1', stranger.token)), []);
    assert.deepEqual(idsOf(await get('to=%2B14155550101', stranger.token)), []);
  });

  it('refuses a malformed or empty value with 400 invalid_request naming the parameter', async () => {
    const cases: [string, string, RegExp][] = [
      ['to=14155550101', 'to', /E\.164/],
      ['to=+14155550101', 'to', /%2B/],
      ['to=%2B0123', 'to', /E\.164/],
      [`to=%2B${'1'.repeat(70)}`, 'to', /./],
      ['batch_id=', 'batch_id', /must not be empty/],
      ['reference=', 'reference', /must not be empty/],
      ['created_after=yesterday', 'created_after', /ISO 8601/],
      ['created_after=2026-03-01T12:00:00', 'created_after', /time zone/],
      ['created_before=2026-02-30T12:00:00Z', 'created_before', /ISO 8601/],
      ['created_before=2026-03-01T12:00:00+01:00', 'created_before', /%2B/],
      ['to=%2B14155550101&to=%2B14155550102', 'to', /once/],
    ];
    for (const [query, param, message] of cases) {
      const body = assertErrorShape(await get(query), 400, 'invalid_request');
      assert.equal(body.param, param, query);
      assert.match(String(body.message), message, query);
    }
  });
});

await forEachDialect('livemode on calls, batches and recipients', (dialect) => {
  describe('each resource says the mode of the key that made it', () => {
    const t: TestApp = appFor(dialect);

    it('a live key’s call and batch are livemode true, a test key’s false, in every answer', async () => {
      const live = await t.newAccount({ agentId: 'agent_modes', mode: 'live' });
      const test = await createApiKey(t.services.db, t.services.clock, { accountId: live.accountId, name: 'test', mode: 'test' });
      for (const [token, livemode] of [
        [live.token, true],
        [test.token, false],
      ] as const) {
        const created = await t.createCall({ agent_id: 'agent_modes', to: '+14155550123' }, { token });
        assert.equal(created.json().livemode, livemode);
        const id = created.json().id as string;
        assert.equal((await apiGet(t, `/v1/calls/${id}`, token)).json().livemode, livemode);
        const listed = (await apiGet(t, '/v1/calls', token)).json().data;
        assert.ok(listed.length > 0 && listed.every((call: { livemode: boolean }) => call.livemode === livemode));

        const batch = await createBatch(t, numbers(2), { agent_id: 'agent_modes' }, { token });
        assert.equal(batch.livemode, livemode);
        assert.equal((await apiGet(t, `/v1/batches/${batch.id}`, token)).json().livemode, livemode);
        assert.equal((await apiGet(t, '/v1/batches', token)).json().data[0].livemode, livemode);
        const recipients = (await apiGet(t, `/v1/batches/${batch.id}/recipients`, token)).json().data;
        assert.deepEqual(
          recipients.map((recipient: { livemode: boolean }) => recipient.livemode),
          [livemode, livemode],
        );
      }
    });

    it('a 201 stored for an Idempotency-Key before the upgrade is replayed with livemode (migration 0025)', async () => {
      const test = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'old', mode: 'test' });
      const body = { agent_id: t.seed.agentId, to: '+14155550124' };
      const first = await t.createCall(body, { token: test.token, idempotencyKey: 'before-upgrade' });
      assert.equal(first.statusCode, 201);
      // The answer as it was stored before livemode existed.
      const { livemode, ...before } = first.json();
      assert.equal(livemode, false);
      await t.services.db
        .updateTable('idempotency_keys')
        .set({ response_body: JSON.stringify(before) })
        .where('idempotency_key', '=', 'before-upgrade')
        .execute();
      await addLivemodeToStoredAnswers(t.services.db);
      const replay = await t.createCall(body, { token: test.token, idempotencyKey: 'before-upgrade' });
      assert.equal(replay.statusCode, 201);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.deepEqual(replay.json(), first.json());
    });
  });
});
