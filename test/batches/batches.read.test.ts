/**
 * Reading and steering batches on both databases, with no worker running (nothing is dialed): GET
 * /v1/batches pages newest first with a cursor and a status filter, recipients page in the order sent,
 * and pause, resume and cancel answer the batch, the same twice, and refuse what cannot be.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { allRecipients, apiGet, apiPost, createBatch, numbers, readBatch } from '../support/batch-client.js';

await forEachDialect('Reading, pausing, resuming and cancelling batches', (dialect) => {
  let t: TestApp;
  let token: string;
  before(async () => {
    t = await startTestApp(dialect);
    // An account of its own, so that the lists hold only this suite's batches.
    token = (await t.newAccount({ agentId: 'agent_lists' })).token;
  });
  after(async () => t.close());

  const ids = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((item) => item.id);

  describe('GET /v1/batches', () => {
    const made: string[] = [];
    before(async () => {
      for (let i = 0; i < 5; i++)
        made.push((await createBatch(t, numbers(2, 100 * i), { agent_id: 'agent_lists', name: `b${i}` }, { token })).id);
    });

    it('lists newest first, with counts, in cursor pages', async () => {
      const first = await apiGet(t, '/v1/batches?limit=2', token);
      assert.equal(first.statusCode, 200, first.body);
      assert.deepEqual(ids(first), [made[4], made[3]]);
      assert.equal(first.json().has_more, true);
      assert.equal(first.json().data[0].counts.total, 2);
      const second = await apiGet(t, `/v1/batches?limit=2&starting_after=${made[3]}`, token);
      assert.deepEqual(ids(second), [made[2], made[1]]);
      const last = await apiGet(t, `/v1/batches?limit=2&starting_after=${made[1]}`, token);
      assert.deepEqual(ids(last), [made[0]]);
      assert.equal(last.json().has_more, false);
      assert.deepEqual(ids(await apiGet(t, '/v1/batches', token)), [...made].reverse());
    });

    it('filters by status', async () => {
      await apiPost(t, `/v1/batches/${made[1]}/pause`, token);
      assert.deepEqual(ids(await apiGet(t, '/v1/batches?status=paused', token)), [made[1]]);
      assert.deepEqual(ids(await apiGet(t, '/v1/batches?status=completed', token)), []);
      await apiPost(t, `/v1/batches/${made[1]}/resume`, token);
    });

    it('refuses a bad limit, status, cursor or parameter, naming it', async () => {
      const cases: [string, string, RegExp][] = [
        ['limit=0', 'limit', /from 1 to 100/],
        ['limit=101', 'limit', /from 1 to 100/],
        ['status=done', 'status', /scheduled, running, paused, completed, cancelled/],
        ['starting_after=batch_unknown', 'starting_after', /not a batch of this account/],
        [`starting_after=${made[0]}x`, 'starting_after', /not a batch/],
        ['bogus=1', 'bogus', /Unknown query parameter/],
      ];
      for (const [query, param, message] of cases) {
        const res = await apiGet(t, `/v1/batches?${query}`, token);
        assert.equal(res.statusCode, 400, `${query}: ${res.body}`);
        assert.equal(res.json().param, param, query);
        assert.match(res.json().message, message, query);
      }
      // Another account's batch is no cursor here.
      const foreign = await createBatch(t, numbers(1));
      assert.equal((await apiGet(t, `/v1/batches?starting_after=${foreign.id}`, token)).statusCode, 400);
    });
  });

  describe('GET /v1/batches/{id}/recipients', () => {
    let batchId: string;
    const tos = numbers(7, 3000);
    before(async () => {
      batchId = (await createBatch(t, tos, { agent_id: 'agent_lists' }, { token })).id;
    });

    it('lists in the order sent, in cursor pages', async () => {
      const pageOne = await apiGet(t, `/v1/batches/${batchId}/recipients?limit=3`, token);
      assert.deepEqual(
        pageOne.json().data.map((r: { to: string }) => r.to),
        tos.slice(0, 3),
      );
      assert.equal(pageOne.json().has_more, true);
      const after = pageOne.json().data[2].id;
      const pageTwo = await apiGet(t, `/v1/batches/${batchId}/recipients?limit=3&starting_after=${after}`, token);
      assert.deepEqual(
        pageTwo.json().data.map((r: { to: string }) => r.to),
        tos.slice(3, 6),
      );
      assert.deepEqual(
        (await allRecipients(t, batchId, token)).map((r) => r.to),
        tos,
      );
    });

    it('filters by status, and refuses a cursor of another batch', async () => {
      assert.equal((await apiGet(t, `/v1/batches/${batchId}/recipients?status=queued`, token)).json().data.length, 7);
      assert.equal((await apiGet(t, `/v1/batches/${batchId}/recipients?status=failed`, token)).json().data.length, 0);
      const other = await createBatch(t, numbers(1, 4000), { agent_id: 'agent_lists' }, { token });
      const otherRecipient = (await allRecipients(t, other.id, token))[0]!.id;
      const res = await apiGet(t, `/v1/batches/${batchId}/recipients?starting_after=${otherRecipient}`, token);
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().param, 'starting_after');
      const status = await apiGet(t, `/v1/batches/${batchId}/recipients?status=ringing`, token);
      assert.equal(status.statusCode, 400);
      assert.match(status.json().message, /queued, dialing, in_progress, completed, failed, cancelled/);
    });
  });

  describe('pause, resume, cancel', () => {
    it('pause and resume answer the batch, the same twice; a scheduled batch resumes to scheduled', async () => {
      const scheduledAt = new Date(t.services.clock.now().getTime() + 3600_000).toISOString();
      const batch = await createBatch(t, numbers(2, 5000), { agent_id: 'agent_lists', scheduled_at: scheduledAt }, { token });
      const paused = await apiPost(t, `/v1/batches/${batch.id}/pause`, token);
      assert.equal(paused.statusCode, 200, paused.body);
      assert.equal(paused.json().status, 'paused');
      assert.deepEqual((await apiPost(t, `/v1/batches/${batch.id}/pause`, token)).json(), paused.json());
      const resumed = await apiPost(t, `/v1/batches/${batch.id}/resume`, token);
      assert.equal(resumed.json().status, 'scheduled');
      assert.deepEqual((await apiPost(t, `/v1/batches/${batch.id}/resume`, token)).json(), resumed.json());
      const running = await createBatch(t, numbers(1, 5100), { agent_id: 'agent_lists' }, { token });
      await apiPost(t, `/v1/batches/${running.id}/pause`, token);
      assert.equal((await apiPost(t, `/v1/batches/${running.id}/resume`, token)).json().status, 'running');
    });

    it('takes a bodiless request sent with Content-Type: application/json, as many clients send it; a creating POST still needs its body', async () => {
      const batch = await createBatch(t, numbers(1, 5500), { agent_id: 'agent_lists' }, { token });
      const json = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const paused = await t.inject({ method: 'POST', url: `/v1/batches/${batch.id}/pause`, headers: json, payload: '' });
      assert.equal(paused.statusCode, 200, paused.body);
      assert.equal(paused.json().status, 'paused');
      const cancelled = await t.inject({ method: 'POST', url: `/v1/batches/${batch.id}/cancel`, headers: json });
      assert.equal(cancelled.statusCode, 200, cancelled.body);
      const removed = await t.inject({ method: 'DELETE', url: '/v1/suppressions/%2B14155550199', headers: json, payload: '' });
      assert.equal(removed.statusCode, 404, removed.body);
      assert.equal(removed.json().error, 'not_found');
      const empty = await t.inject({ method: 'POST', url: '/v1/batches', headers: json, payload: '' });
      assert.equal(empty.statusCode, 400, empty.body);
      assert.equal(empty.json().error, 'invalid_json');
    });

    it('cancel ends every queued recipient and the batch; twice gives the same; it can be neither resumed nor paused', async () => {
      const batch = await createBatch(t, numbers(3, 6000), { agent_id: 'agent_lists' }, { token });
      const cancelled = await apiPost(t, `/v1/batches/${batch.id}/cancel`, token);
      assert.equal(cancelled.statusCode, 200, cancelled.body);
      assert.equal(cancelled.json().status, 'cancelled');
      assert.deepEqual(cancelled.json().counts, { total: 3, queued: 0, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 3 });
      // Nothing was under way, so the batch ended then.
      assert.ok(cancelled.json().completed_at);
      assert.deepEqual((await apiPost(t, `/v1/batches/${batch.id}/cancel`, token)).json(), cancelled.json());
      assert.deepEqual(
        (await allRecipients(t, batch.id, token)).map((r) => r.status),
        ['cancelled', 'cancelled', 'cancelled'],
      );

      const resume = await apiPost(t, `/v1/batches/${batch.id}/resume`, token);
      assert.equal(resume.statusCode, 409);
      assert.equal(resume.json().error, 'batch_not_resumable');
      assert.match(resume.json().message, /cancelled/);
      const pause = await apiPost(t, `/v1/batches/${batch.id}/pause`, token);
      assert.equal(pause.statusCode, 409);
      assert.equal(pause.json().error, 'batch_finished');
      assert.deepEqual(await readBatch(t, batch.id, token), cancelled.json());
    });

    it('a completed batch cannot be resumed, paused or cancelled', async () => {
      const batch = await createBatch(t, numbers(1, 7000), { agent_id: 'agent_lists' }, { token });
      await t.services.db
        .updateTable('batches')
        .set({ status: 'completed', completed_at: batch.created_at })
        .where('id', '=', batch.id)
        .execute();
      for (const [action, code] of [
        ['resume', 'batch_not_resumable'],
        ['pause', 'batch_finished'],
        ['cancel', 'batch_finished'],
      ] as const) {
        const res = await apiPost(t, `/v1/batches/${batch.id}/${action}`, token);
        assert.equal(res.statusCode, 409, `${action}: ${res.body}`);
        assert.equal(res.json().error, code);
      }
    });

    it('another account, the other mode and an unknown id are 404; other methods 405', async () => {
      const batch = await createBatch(t, numbers(1, 8000), { agent_id: 'agent_lists' }, { token });
      for (const action of ['pause', 'resume', 'cancel']) {
        assert.equal((await apiPost(t, `/v1/batches/${batch.id}/${action}`)).statusCode, 404);
        assert.equal((await apiPost(t, `/v1/batches/batch_unknown/${action}`, token)).statusCode, 404);
      }
      assert.equal((await readBatch(t, batch.id, token)).status, 'running');
      const wrong = await t.inject({ method: 'GET', url: `/v1/batches/${batch.id}/cancel`, headers: { authorization: `Bearer ${token}` } });
      assert.equal(wrong.statusCode, 405);
      assert.equal(wrong.headers.allow, 'POST');
      const remove = await t.inject({ method: 'DELETE', url: `/v1/batches/${batch.id}`, headers: { authorization: `Bearer ${token}` } });
      assert.equal(remove.statusCode, 405);
      assert.equal(remove.json().error, 'method_not_allowed');
    });

    it('an id with a NUL character is 404 on every batch route, not a database error', async () => {
      // PostgreSQL refuses a NUL in text outright; SQLite just finds nothing.
      for (const id of ['%00', 'batch_a%00b']) {
        for (const res of [
          await apiGet(t, `/v1/batches/${id}`, token),
          await apiGet(t, `/v1/batches/${id}/recipients`, token),
          ...(await Promise.all(['pause', 'resume', 'cancel'].map((action) => apiPost(t, `/v1/batches/${id}/${action}`, token)))),
        ]) {
          assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
          assert.equal(res.json().error, 'not_found');
          assert.match(res.json().request_id, /^req_/);
        }
      }
    });
  });
});
