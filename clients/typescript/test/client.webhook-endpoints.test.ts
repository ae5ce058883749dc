/**
 * The client's webhookEndpoints resource against the real callgate app on a real port, on SQLite and
 * PostgreSQL: a create retried after a lost answer is the server's replay (one endpoint, the same secret),
 * reads never carry the secret, lists follow the cursor and the url filter, update and delete map their
 * routes and errors, and rotateSecret is not retried on its own.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { recordingFetch, type Fault } from '../../../test/support/client-faults.js';
import { startTestApp, type SeededAccount, type TestApp } from '../../../test/support/test-app.js';
import { Callgate, CallgateError, ConnectionError, InvalidRequestError, NotFoundError } from '../src/index.js';

const quick = { initialRetryDelayMs: 20, maxRetryDelayMs: 100 } as const;

async function thrown(promise: Promise<unknown>): Promise<CallgateError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CallgateError, `a CallgateError, not ${String(error)}`);
    return error;
  }
  assert.fail('expected the promise to reject');
}

await forEachDialect('TypeScript client: webhook endpoints', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  let agents = 0;
  const faulty = (account: SeededAccount, faults: Fault[] = []) => {
    const recorder = recordingFetch(faults);
    return { ...recorder, callgate: new Callgate({ apiKey: account.token, baseUrl, ...quick, fetch: recorder.fetch }) };
  };
  const freshAccount = () => t.newAccount({ agentId: `agent_client_we_${++agents}` });

  before(async () => {
    t = await startTestApp(dialect);
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  describe('webhookEndpoints', () => {
    it('create: one Idempotency-Key across tries; a lost answer is replayed, so one endpoint and its secret', async () => {
      const account = await freshAccount();
      const { callgate, attempts } = faulty(account, ['drop']);
      const created = await callgate.webhookEndpoints.create({
        url: 'https://example.com/n8n/hook',
        enabled_events: ['call.completed', 'call.failed'],
        description: 'n8n workflow 12',
      });
      assert.equal(attempts.length, 2);
      assert.ok(attempts[0]!.idempotencyKey);
      assert.equal(attempts[1]!.idempotencyKey, attempts[0]!.idempotencyKey);
      assert.equal(created.lastResponse.replayed, true);
      assert.equal(created.lastResponse.status, 201);
      assert.match(created.id, /^we_/);
      assert.match(created.secret, /^whsec_/);
      assert.deepEqual(created.enabled_events, ['call.completed', 'call.failed']);
      assert.equal(created.livemode, true);
      assert.equal(created.status, 'enabled');
      assert.equal(created.disabled_reason, null);
      const all = await callgate.webhookEndpoints.list().toArray();
      assert.deepEqual(
        all.map((endpoint) => endpoint.id),
        [created.id],
        'one endpoint despite two tries',
      );
      const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.equal(row.secret, created.secret, 'the replay carries the secret the endpoint signs with');
    });

    it('retrieve, list and listPage: newest first across pages, url filter, never a secret', async () => {
      const account = await freshAccount();
      const { callgate, attempts } = faulty(account);
      const ids: string[] = [];
      for (let n = 0; n < 3; n++) ids.push((await callgate.webhookEndpoints.create({ url: `https://example.com/hooks/${n}` })).id);
      const before = attempts.length;
      const listed = await callgate.webhookEndpoints.list({ limit: 2 }).toArray();
      assert.deepEqual(
        listed.map((endpoint) => endpoint.id),
        ids.slice().reverse(),
      );
      assert.equal(attempts.length - before, 2, 'two pages');
      assert.ok(listed.every((endpoint) => !('secret' in endpoint)));
      const page = await callgate.webhookEndpoints.listPage({ limit: 1 });
      assert.equal(page.has_more, true);
      assert.equal(page.data[0]!.id, ids[2]);
      const byUrl = await callgate.webhookEndpoints.listPage({ url: 'https://example.com/hooks/1' });
      assert.deepEqual(
        byUrl.data.map((endpoint) => endpoint.id),
        [ids[1]],
      );
      const retrieved = await callgate.webhookEndpoints.retrieve(ids[0]!);
      assert.equal(retrieved.url, 'https://example.com/hooks/0');
      assert.ok(!('secret' in retrieved));
    });

    it('update changes fields and disables or enables; refused fields are InvalidRequestError with their param', async () => {
      const account = await freshAccount();
      const { callgate } = faulty(account);
      const { id } = await callgate.webhookEndpoints.create({ url: 'https://example.com/zap' });
      const updated = await callgate.webhookEndpoints.update(id, { enabled_events: ['batch.completed'], description: 'Zap' });
      assert.deepEqual([updated.enabled_events, updated.description], [['batch.completed'], 'Zap']);
      assert.ok(!('secret' in updated));
      const disabled = await callgate.webhookEndpoints.update(id, { disabled: true });
      assert.deepEqual([disabled.status, disabled.disabled_reason], ['disabled', 'Disabled by a user.']);
      assert.equal((await callgate.webhookEndpoints.update(id, { disabled: false })).status, 'enabled');
      const refused = await thrown(callgate.webhookEndpoints.update(id, { enabled_events: ['call.answered'] }));
      assert.ok(refused instanceof InvalidRequestError);
      assert.equal(refused.code, 'invalid_request');
      assert.equal(refused.param, 'enabled_events');
      const badUrl = await thrown(callgate.webhookEndpoints.create({ url: 'ftp://example.com/' }));
      assert.equal(badUrl.param, 'url');
    });

    it('delete answers 204 once, then NotFoundError; another account sees NotFoundError too', async () => {
      const account = await freshAccount();
      const { callgate } = faulty(account);
      const other = faulty(await freshAccount()).callgate;
      const { id } = await callgate.webhookEndpoints.create({ url: 'https://example.com/bye' });
      assert.ok((await thrown(other.webhookEndpoints.retrieve(id))) instanceof NotFoundError);
      assert.ok((await thrown(other.webhookEndpoints.delete(id))) instanceof NotFoundError);
      const info = await callgate.webhookEndpoints.delete(id);
      assert.equal(info.status, 204);
      assert.ok((await thrown(callgate.webhookEndpoints.delete(id))) instanceof NotFoundError);
      assert.ok((await thrown(callgate.webhookEndpoints.retrieve(id))) instanceof NotFoundError);
    });

    it('rotateSecret answers a new secret, and is not retried after a lost answer (a second rotation would end the old secret)', async () => {
      const account = await freshAccount();
      const { callgate } = faulty(account);
      const created = await callgate.webhookEndpoints.create({ url: 'https://example.com/rotate' });
      const rotated = await callgate.webhookEndpoints.rotateSecret(created.id);
      assert.match(rotated.secret, /^whsec_/);
      assert.notEqual(rotated.secret, created.secret);
      assert.equal(rotated.id, created.id);

      const lossy = faulty(account, ['drop']);
      const lost = await thrown(lossy.callgate.webhookEndpoints.rotateSecret(created.id));
      assert.ok(lost instanceof ConnectionError);
      assert.equal(lossy.attempts.length, 1, 'one try only');
      const row = await t.services.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
      assert.equal(row.previous_secret, rotated.secret, 'rotated once more by the lost try, not twice');
    });
  });
});
