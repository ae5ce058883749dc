/**
 * The request log on SQLite and PostgreSQL, below the portal page: what an authenticated request leaves,
 * the buffered writer storing rows without being asked, the account's last 7 days a page at a time, and
 * the purge of older rows. (The page itself: test/portal/portal.request-log.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { NewRequestLog } from '../../src/features/request-log/request-log.tables.js';
import { listRecentRequests, purgeOldRequests, requestLogRetentionMs } from '../../src/features/request-log/request-log.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';
import { waitUntil } from '../support/wait.js';

const minuteMs = 60_000;

await forEachDialect('Request log', (dialect) => {
  let t: TestApp;
  const clock = new ManualClock();

  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock } });
  });
  after(async () => t.close());

  const row = (account: SeededAccount, id: string, ageMs: number): NewRequestLog => ({
    id,
    account_id: account.accountId,
    api_key_id: account.keyId,
    key_prefix: account.token.slice(0, 12),
    method: 'GET',
    path: '/v1/calls/call_x',
    status: 404,
    error_code: 'not_found',
    idempotency_key: null,
    duration_ms: 2,
    replayed: 0,
    created_at: new Date(clock.now().getTime() - ageMs).toISOString(),
  });
  const stored = async (ids: string[]) =>
    (await t.services.db.selectFrom('request_logs').selectAll().where('id', 'in', ids).orderBy('id').execute()).map((r) => r.id);

  it('an authenticated request leaves one row with its key, line, status, error code and idempotency key', async () => {
    const created = await t.createCall(callBody(t), { idempotencyKey: 'order-77' });
    const missing = await t.inject({ method: 'GET', url: '/v1/calls/call_missing', headers: { authorization: `Bearer ${t.seed.token}` } });
    assert.deepEqual([created.statusCode, missing.statusCode], [201, 404]);
    await t.services.requestLog.flush();

    const rows = await t.services.db
      .selectFrom('request_logs')
      .selectAll()
      .where('id', 'in', [String(created.headers['x-request-id']), String(missing.headers['x-request-id'])])
      .execute();
    const byPath = new Map(rows.map((r) => [r.path, r]));
    const post = byPath.get('/v1/calls');
    const get = byPath.get('/v1/calls/call_missing');
    assert.equal(rows.length, 2);
    for (const r of [post, get]) {
      assert.equal(r?.account_id, t.seed.accountId);
      assert.equal(r?.api_key_id, t.seed.keyId);
      assert.equal(r?.key_prefix, t.seed.token.slice(0, 12));
      assert.ok(Number.isInteger(r?.duration_ms) && r!.duration_ms >= 0);
    }
    assert.deepEqual([post?.method, post?.status, post?.error_code, post?.idempotency_key], ['POST', 201, null, 'order-77']);
    assert.deepEqual([get?.method, get?.status, get?.error_code, get?.idempotency_key], ['GET', 404, 'not_found', null]);
  });

  it('stores what it was given shortly, without a flush', async () => {
    t.services.requestLog.add(row(t.seed, 'req_unflushed_1', 0));
    t.services.requestLog.add(row(t.seed, 'req_unflushed_2', 0));
    await waitUntil(async () => (await stored(['req_unflushed_1', 'req_unflushed_2'])).length === 2, 'the buffered rows to be stored');
  });

  it("lists an account's last 7 days newest first, a page at a time, and nothing of another account", async () => {
    const account = await t.newAccount({ agentId: 'agent_listed' });
    const other = await t.newAccount({ agentId: 'agent_other' });
    const ages = {
      req_list_a: 60 * minuteMs,
      req_list_b: 2 * 24 * 60 * minuteMs,
      req_list_c: requestLogRetentionMs - minuteMs,
      req_list_old: requestLogRetentionMs + minuteMs,
    };
    for (const [id, ageMs] of Object.entries(ages)) t.services.requestLog.add(row(account, id, ageMs));
    t.services.requestLog.add(row(other, 'req_list_other', minuteMs));
    await t.services.requestLog.flush();
    const ids = (rows: readonly { id: string }[]) => rows.map((r) => r.id);

    const first = await listRecentRequests(t.services.db, clock, account.accountId, { limit: 2 });
    assert.deepEqual([ids(first.rows), first.hasMore], [['req_list_a', 'req_list_b'], true]);
    const second = await listRecentRequests(t.services.db, clock, account.accountId, { limit: 2, before: 'req_list_b' });
    assert.deepEqual([ids(second.rows), second.hasMore], [['req_list_c'], false]);

    const found = await listRecentRequests(t.services.db, clock, account.accountId, { requestId: ' req_list_b ' });
    assert.deepEqual(ids(found.rows), ['req_list_b']);
    assert.deepEqual(ids((await listRecentRequests(t.services.db, clock, account.accountId, { requestId: 'req_list_other' })).rows), []);
    assert.deepEqual(ids((await listRecentRequests(t.services.db, clock, account.accountId, { before: 'req_list_other' })).rows), []);
  });

  it('the purge removes the rows older than 7 days and keeps the others', async () => {
    const account = await t.newAccount({ agentId: 'agent_purged' });
    t.services.requestLog.add(row(account, 'req_purge_older', requestLogRetentionMs + minuteMs));
    t.services.requestLog.add(row(account, 'req_purge_younger', requestLogRetentionMs - minuteMs));
    await t.services.requestLog.flush();

    assert.ok((await purgeOldRequests(t.services.db, clock)) >= 1);
    assert.deepEqual(await stored(['req_purge_older', 'req_purge_younger']), ['req_purge_younger']);
    clock.advance(2 * minuteMs);
    assert.ok((await purgeOldRequests(t.services.db, clock)) >= 1);
    assert.deepEqual(await stored(['req_purge_older', 'req_purge_younger']), []);
  });
});
