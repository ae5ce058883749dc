/**
 * The TypeScript client against the real callgate app on a real port, on SQLite and PostgreSQL: creates
 * retried through broken connections and timeouts place one call (the retry is the server's replay), a 429
 * is waited out for its Retry-After, a 5xx is retried with the same key, other 4xx are thrown at once with
 * their code and request id, lists follow the cursor, and the resources map their routes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRateLimiter } from '../../../src/features/rate-limit/rate-limit.store.js';
import { createProviderRegistry } from '../../../src/features/providers/provider-registry.js';
import { simulatorMagicNumbers } from '../../../src/features/providers/simulator.provider.js';
import { forEachDialect } from '../../../test/support/dialects.js';
import { createFakeProvider, failures } from '../../../test/support/fake-voice-provider.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startLocalServer } from '../../../test/support/local-server.js';
import { startTestApp, type SeededAccount, type TestApp } from '../../../test/support/test-app.js';
import { until } from '../../../test/support/wait.js';
import {
  Callgate,
  CallgateError,
  ConflictError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  PermissionError,
  RateLimitError,
  ServerError,
  type CallgateOptions,
} from '../src/index.js';
import { recordingFetch, startAnswerEatingProxy, type Fault } from '../../../test/support/client-faults.js';

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** Short backoffs: the tests wait for what the client does, not for its default delays. */
const quick = { initialRetryDelayMs: 20, maxRetryDelayMs: 100 } as const;

async function callsOf(t: TestApp, account: SeededAccount): Promise<number> {
  const rows = await t.services.db.selectFrom('calls').select('id').where('account_id', '=', account.accountId).execute();
  return rows.length;
}

async function thrown(promise: Promise<unknown>): Promise<CallgateError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof CallgateError, `a CallgateError, not ${String(error)}`);
    return error;
  }
  assert.fail('expected the promise to reject');
}

await forEachDialect('TypeScript client against the real server', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const client = (account: SeededAccount, options: Partial<CallgateOptions> = {}) =>
    new Callgate({ apiKey: account.token, baseUrl, ...quick, ...options });
  const faulty = (account: SeededAccount, faults: Fault[], options: Partial<CallgateOptions> = {}) => {
    const recorder = recordingFetch(faults);
    return { ...recorder, callgate: client(account, { ...options, fetch: recorder.fetch }) };
  };

  before(async () => {
    t = await startTestApp(dialect);
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  describe('safe retries of a create', () => {
    it('a connection that breaks after the server answered: the retry, same key, is replayed and one call exists', async () => {
      const account = await t.newAccount({ agentId: 'agent_drop' });
      const { callgate, attempts } = faulty(account, ['drop']);
      const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550123', metadata: { n: 1 } });
      assert.equal(attempts.length, 2);
      assert.deepEqual(
        attempts.map((attempt) => attempt.status),
        [201, 201],
      );
      assert.match(attempts[0]!.idempotencyKey!, uuidV4);
      assert.equal(attempts[1]!.idempotencyKey, attempts[0]!.idempotencyKey);
      assert.equal(call.lastResponse.replayed, true, 'the second try got Idempotent-Replayed: true');
      assert.equal(call.lastResponse.headers.get('idempotent-replayed'), 'true');
      assert.equal(call.lastResponse.attempts, 2);
      assert.equal(call.lastResponse.idempotency_key, attempts[0]!.idempotencyKey);
      assert.match(String(call.lastResponse.request_id), /^req_/);
      assert.equal(call.status, 'initiated');
      assert.equal(await callsOf(t, account), 1);
      const listed = await callgate.calls.list().toArray();
      assert.deepEqual(
        listed.map((c) => c.id),
        [call.id],
      );
      assert.equal(JSON.stringify(call).includes('lastResponse'), false, 'lastResponse stays out of JSON');
    });

    it('an answer cut by a real broken connection (a proxy that drops it) is retried into one call', async () => {
      const account = await t.newAccount({ agentId: 'agent_proxy' });
      const proxy = await startAnswerEatingProxy(Number(new URL(baseUrl).port));
      try {
        const { fetch, attempts } = recordingFetch();
        const callgate = new Callgate({ apiKey: account.token, baseUrl: proxy.url, ...quick, fetch });
        proxy.eatAnswers = 1;
        const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550124' });
        assert.equal(attempts.length, 2, 'undici saw the connection close and the client tried again');
        assert.equal(attempts[1]!.idempotencyKey, attempts[0]!.idempotencyKey);
        assert.equal(call.lastResponse.replayed, true);
        assert.equal(await callsOf(t, account), 1);
      } finally {
        await proxy.close();
      }
    });

    it('a try that times out after reaching the server is retried with its key and replayed', async () => {
      const account = await t.newAccount({ agentId: 'agent_late' });
      const { callgate, attempts } = faulty(account, ['late'], { timeoutMs: 300 });
      const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550125' });
      assert.equal(attempts.length, 2);
      assert.equal(call.lastResponse.replayed, true);
      assert.equal(await callsOf(t, account), 1);
    });

    it('keeps the caller’s own Idempotency-Key; refused connections are retried up to maxRetries, then thrown', async () => {
      const account = await t.newAccount({ agentId: 'agent_refused' });
      const { callgate, attempts } = faulty(account, ['refuse', 'refuse']);
      const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550126' }, { idempotencyKey: 'order-881-call' });
      assert.deepEqual(
        attempts.map((attempt) => attempt.idempotencyKey),
        ['order-881-call', 'order-881-call', 'order-881-call'],
      );
      assert.equal(call.lastResponse.replayed, false, 'only the third try reached the server');
      assert.equal(await callsOf(t, account), 1);

      // Nothing listens on a stopped server's port: real ECONNREFUSED from fetch, three tries, then the error.
      const stopped = await startLocalServer((_req, res) => res.end());
      await stopped.stop();
      const recorder = recordingFetch();
      const nowhere = new Callgate({ apiKey: account.token, baseUrl: `http://127.0.0.1:${stopped.port}`, ...quick, fetch: recorder.fetch });
      const error = await thrown(nowhere.calls.create({ agent_id: account.agentId, to: '+14155550126' }));
      assert.ok(error instanceof ConnectionError);
      assert.equal(error.code, 'connection_error');
      assert.equal(error.status, null);
      assert.equal(error.request_id, null);
      assert.match(error.message, /ECONNREFUSED/);
      assert.equal(recorder.attempts.length, 3);
      assert.equal(new Set(recorder.attempts.map((attempt) => attempt.idempotencyKey)).size, 1);
      assert.equal(error.idempotency_key, recorder.attempts[0]!.idempotencyKey);
    });

    it('a definite refusal (502 provider_error, retryable false) is thrown at once with its code and request id, never tried again', async () => {
      const account = await t.newAccount({ agentId: 'agent_502' });
      const { callgate, attempts } = faulty(account, [], { maxRetries: 2 });
      const error = await thrown(callgate.calls.create({ agent_id: account.agentId, to: simulatorMagicNumbers.refused }));
      assert.ok(error instanceof ServerError);
      assert.equal(error.status, 502);
      assert.equal(error.code, 'provider_error');
      assert.equal(error.retryable, false);
      assert.match(String(error.request_id), /^req_/);
      assert.deepEqual(
        attempts.map((attempt) => attempt.status),
        [502],
      );
      assert.equal(await callsOf(t, account), 0);
    });
  });

  describe('GETs', () => {
    it('are retried too: a page whose answer was lost is asked again, and the iteration goes on', async () => {
      const account = await t.newAccount({ agentId: 'agent_get_retry' });
      const setup = client(account);
      const created: string[] = [];
      for (let i = 0; i < 3; i++) created.push((await setup.calls.create({ agent_id: account.agentId, to: `+1415555070${i}` })).id);
      // Tries: page 1, page 2 (answer lost), page 2 again, then a retrieve refused once.
      const { callgate, attempts } = faulty(account, [undefined, 'drop', undefined, 'refuse']);
      const ids: string[] = [];
      for await (const call of callgate.calls.list({ limit: 2 })) ids.push(call.id);
      assert.deepEqual(ids, created.slice().reverse());
      assert.equal(attempts.length, 3);
      assert.equal(attempts[2]!.url, attempts[1]!.url, 'the same page asked again');
      assert.equal(attempts[0]!.idempotencyKey, null, 'GETs carry no Idempotency-Key');
      const call = await callgate.calls.retrieve(created[0]!);
      assert.equal(call.id, created[0]);
      assert.equal(call.lastResponse.attempts, 2);
    });
  });

  describe('errors that are not retried', () => {
    it('400, 403, 404 and 409 are thrown after one try, with status, code, message, param and request_id', async () => {
      const account = await t.newAccount({ agentId: 'agent_errors' });
      const { callgate, attempts } = faulty(account, []);

      const invalid = await thrown(callgate.calls.create({ agent_id: account.agentId, to: '555' }));
      assert.ok(invalid instanceof InvalidRequestError);
      assert.equal(invalid.status, 400);
      assert.equal(invalid.code, 'invalid_request');
      assert.equal(invalid.param, 'to');
      assert.match(invalid.message, /E\.164/);
      assert.match(String(invalid.request_id), /^req_/);
      assert.equal(attempts.length, 1);

      const forbidden = await thrown(callgate.calls.create({ agent_id: 'agent_nobody', to: '+14155550123' }));
      assert.ok(forbidden instanceof PermissionError);
      assert.equal(forbidden.code, 'agent_not_found');
      assert.equal(attempts.length, 2);

      const missing = await thrown(callgate.calls.retrieve('call_nope'));
      assert.ok(missing instanceof NotFoundError);
      assert.equal(missing.status, 404);
      assert.equal(missing.code, 'not_found');
      assert.match(missing.message, /call_nope/);
      assert.match(String(missing.request_id), /^req_/);
      assert.equal(attempts.length, 3);

      await callgate.calls.create({ agent_id: account.agentId, to: '+14155550127' }, { idempotencyKey: 'reused-key' });
      const conflict = await thrown(
        callgate.calls.create({ agent_id: account.agentId, to: '+14155550128' }, { idempotencyKey: 'reused-key' }),
      );
      assert.ok(conflict instanceof ConflictError);
      assert.equal(conflict.status, 409);
      assert.equal(conflict.code, 'idempotency_conflict');
      assert.equal(conflict.idempotency_key, 'reused-key');
      assert.equal(attempts.length, 5);
      assert.equal(await callsOf(t, account), 1);

      const badKey = await thrown(callgate.calls.create({ agent_id: account.agentId, to: '+14155550128' }, { idempotencyKey: 'é' }));
      assert.equal(badKey.code, 'invalid_idempotency_key');
      assert.equal(attempts.length, 6);

      const unauthorized = await thrown(client({ ...account, token: 'cg_live_nope' }).calls.listPage());
      assert.equal(unauthorized.status, 401);
      assert.equal(unauthorized.code, 'unauthorized');
    });
  });

  describe('resources', () => {
    it('calls.list follows the cursor across pages; listPage reads one', async () => {
      const account = await t.newAccount({ agentId: 'agent_pages' });
      const { callgate, attempts } = faulty(account, []);
      const created: string[] = [];
      for (let i = 0; i < 5; i++) created.push((await callgate.calls.create({ agent_id: account.agentId, to: `+1415555020${i}` })).id);
      const before = attempts.length;
      const ids: string[] = [];
      for await (const call of callgate.calls.list({ limit: 2 })) ids.push(call.id);
      assert.deepEqual(ids, created.slice().reverse(), 'newest first, every call once');
      assert.equal(attempts.length - before, 3, 'three pages of 2, 2 and 1');
      assert.match(attempts.at(-1)!.url, new RegExp(`starting_after=${ids[3]}`));

      const page = await callgate.calls.listPage({ limit: 2, starting_after: ids[1]! });
      assert.deepEqual(
        page.data.map((call) => call.id),
        ids.slice(2, 4),
      );
      assert.equal(page.has_more, true);
      const pages = [];
      for await (const p of callgate.calls.list({ limit: 4 }).pages()) pages.push(p.data.length);
      assert.deepEqual(pages, [4, 1]);
      const retrieved = await callgate.calls.retrieve(created[0]!);
      assert.equal(retrieved.id, created[0]);
      assert.equal(retrieved.agent_id, account.agentId);
    });

    it('batches: create (idempotent), retrieve, list, recipients, pause, resume, cancel', async () => {
      const account = await t.newAccount({ agentId: 'agent_batches' });
      const { callgate, attempts } = faulty(account, ['drop']);
      const scheduledAt = new Date(Date.now() + 3600_000).toISOString();
      const batch = await callgate.batches.create({
        agent_id: account.agentId,
        name: 'Reminders',
        scheduled_at: scheduledAt,
        recipients: [
          { to: '+14155550301', reference: 'a' },
          { to: '+14155550302', reference: 'b', metadata: { customer_name: 'Ada' } },
          { to: '+14155550303' },
        ],
      });
      assert.equal(batch.lastResponse.replayed, true);
      assert.equal(attempts[1]!.idempotencyKey, attempts[0]!.idempotencyKey);
      assert.equal(batch.status, 'scheduled');
      assert.equal(batch.counts.total, 3);
      assert.equal((await callgate.batches.list().toArray()).length, 1, 'one batch despite two tries');
      assert.equal((await callgate.batches.retrieve(batch.id)).name, 'Reminders');
      const recipients = await callgate.batches.listRecipients(batch.id, { limit: 2 }).toArray();
      assert.deepEqual(
        recipients.map((r) => [r.to, r.reference, r.status]),
        [
          ['+14155550301', 'a', 'queued'],
          ['+14155550302', 'b', 'queued'],
          ['+14155550303', null, 'queued'],
        ],
      );
      assert.equal((await callgate.batches.listRecipientsPage(batch.id, { limit: 1 })).has_more, true);
      assert.equal((await callgate.batches.pause(batch.id)).status, 'paused');
      assert.equal((await callgate.batches.pause(batch.id)).status, 'paused', 'the same action twice, the same answer');
      assert.equal((await callgate.batches.resume(batch.id)).status, 'scheduled');
      const cancelled = await callgate.batches.cancel(batch.id);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(cancelled.counts.cancelled, 3);
      assert.deepEqual(
        (await callgate.batches.list({ status: 'cancelled' }).toArray()).map((b) => b.id),
        [batch.id],
      );
      const refused = await thrown(callgate.batches.resume(batch.id));
      assert.ok(refused instanceof ConflictError);
      assert.equal(refused.code, 'batch_not_resumable');
      assert.equal((await thrown(callgate.batches.retrieve('batch_nope'))).code, 'not_found');
    });

    it('suppressions: create (201, then 200 unchanged), retrieve, list, delete; a listed number is not called', async () => {
      const account = await t.newAccount({ agentId: 'agent_supp' });
      const callgate = client(account);
      const entry = await callgate.suppressions.create({ to: '+14155550401', reason: 'Asked not to be called' });
      assert.equal(entry.lastResponse.status, 201);
      assert.match(entry.id, /^sup_/);
      const again = await callgate.suppressions.create({ to: '+14155550401', reason: 'Another reason' });
      assert.equal(again.lastResponse.status, 200);
      assert.deepEqual({ ...again }, { ...entry });
      await callgate.suppressions.create({ to: '+14155550402' });
      assert.deepEqual(await callgate.suppressions.retrieve('+14155550401'), entry);
      assert.deepEqual(
        (await callgate.suppressions.list({ limit: 1 }).toArray()).map((s) => s.to),
        ['+14155550402', '+14155550401'],
      );
      const refused = await thrown(callgate.calls.create({ agent_id: account.agentId, to: '+14155550401' }));
      assert.ok(refused instanceof PermissionError);
      assert.equal(refused.code, 'number_suppressed');
      assert.equal(refused.param, 'to');
      assert.equal((await callgate.suppressions.delete('+14155550401')).status, 204);
      const gone = await thrown(callgate.suppressions.retrieve('+14155550401'));
      assert.ok(gone instanceof NotFoundError);
      assert.equal((await thrown(callgate.suppressions.delete('+14155550401'))).status, 404);
      const malformed = await thrown(callgate.suppressions.retrieve('14155550401'));
      assert.equal(malformed.code, 'invalid_request');
      assert.equal(malformed.param, 'to');
    });
  });
});

await forEachDialect('TypeScript client: a 429 waited out, provider faults', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const provider = createFakeProvider();

  before(async () => {
    // The real limiter with a window of 2 seconds instead of a minute, so that its Retry-After is short.
    const perKeyLimiter = await createRateLimiter({ store: { kind: 'memory' }, name: 'cg_key', pointsPerWindow: 2, windowSeconds: 2 });
    t = await startTestApp(dialect, { overrides: { perKeyLimiter, providers: createProviderRegistry({ simulator: provider }) } });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('a 429 is retried after its Retry-After, with the same Idempotency-Key, into one call', async () => {
    const account = await t.newAccount({ agentId: 'agent_429' });
    const { fetch, attempts } = recordingFetch();
    const callgate = new Callgate({ apiKey: account.token, baseUrl, ...quick, fetch });
    await callgate.calls.listPage();
    await callgate.calls.listPage();
    const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550501' });
    const [limited, retried] = attempts.slice(2);
    assert.equal(limited!.status, 429);
    const retryAfterSeconds = Number(limited!.retryAfter);
    assert.ok(retryAfterSeconds >= 1 && retryAfterSeconds <= 2, `Retry-After ${limited!.retryAfter}`);
    assert.equal(retried!.status, 201);
    assert.equal(retried!.idempotencyKey, limited!.idempotencyKey);
    assert.ok(
      retried!.startedAt - limited!.startedAt >= retryAfterSeconds * 1000,
      `waited ${retried!.startedAt - limited!.startedAt} ms for Retry-After ${retryAfterSeconds}`,
    );
    assert.equal(call.lastResponse.attempts, 2);
    assert.equal(call.lastResponse.replayed, false, 'the 429 stored nothing: the retry created the call');
  });

  it('out of retries, or asked to wait longer than maxRetryAfterMs, it throws RateLimitError with the wait', async () => {
    const account = await t.newAccount({ agentId: 'agent_429_out' });
    const { fetch, attempts } = recordingFetch();
    const impatient = new Callgate({ apiKey: account.token, baseUrl, ...quick, fetch, maxRetryAfterMs: 0 });
    await impatient.calls.listPage();
    await impatient.calls.listPage();
    const error = await thrown(impatient.calls.listPage());
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'rate_limit_exceeded');
    assert.match(String(error.request_id), /^req_/);
    assert.ok(error.retry_after_seconds! >= 1);
    assert.equal(attempts.length, 3, 'not retried: the wait is the caller’s to schedule');

    const noRetries = new Callgate({ apiKey: account.token, baseUrl, ...quick, maxRetries: 0 });
    assert.equal((await thrown(noRetries.calls.listPage())).code, 'rate_limit_exceeded');
  });

  it('503 provider_unavailable (nothing placed) is retried into one call; 504 provider_timeout is retried with its key and gets the call found', async () => {
    const account = await t.newAccount({ agentId: 'agent_provider' });
    const { fetch, attempts } = recordingFetch();
    const callgate = new Callgate({ apiKey: account.token, baseUrl, ...quick, fetch });
    provider.reset();
    provider.steps = [{ failure: failures.unavailable }];
    const call = await callgate.calls.create({ agent_id: account.agentId, to: '+14155550502' });
    assert.deepEqual(
      attempts.map((attempt) => attempt.status),
      [503, 201],
    );
    assert.equal(attempts[1]!.idempotencyKey, attempts[0]!.idempotencyKey);
    assert.equal(provider.attempts, 2);
    assert.equal(await callsOf(t, account), 1);
    assert.equal(call.lastResponse.attempts, 2);

    // The provider placed this one but its answer was lost: the key stays held, the client retries it, and
    // once the server found the call the retry gets it. The provider is asked once.
    const other = await t.newAccount({ agentId: 'agent_provider_timeout' });
    const recorder = recordingFetch();
    provider.reset();
    provider.steps = [{ failure: failures.timeout, placed: true }];
    const error = await thrown(
      new Callgate({ apiKey: other.token, baseUrl, ...quick, fetch: recorder.fetch, maxRetries: 1 }).calls.create(
        { agent_id: other.agentId, to: '+14155550503' },
        { idempotencyKey: 'client-lost-answer' },
      ),
    );
    assert.ok(error instanceof ServerError);
    assert.equal(error.status, 504);
    assert.equal(error.code, 'provider_timeout');
    assert.equal(recorder.attempts.length, 2, 'retried: the key is held, so a retry cannot call twice');
    assert.equal(provider.attempts, 1);
    t.services.jobs.start([t.services.dialJob.name]);
    await until('the dial to be found', async () => {
      await t.services.dialJob.pass();
      const dial = await t.services.db
        .selectFrom('dials')
        .select('state')
        .where('idempotency_key', '=', 'client-lost-answer')
        .executeTakeFirst();
      return dial?.state === 'found' ? true : undefined;
    });
    const found = await new Callgate({ apiKey: other.token, baseUrl, ...quick }).calls.create(
      { agent_id: other.agentId, to: '+14155550503' },
      { idempotencyKey: 'client-lost-answer' },
    );
    assert.equal(found.lastResponse.replayed, true);
    assert.equal(provider.attempts, 1);
    assert.equal(await callsOf(t, other), 1);
  });
});
