/**
 * Idempotency under concurrency, over real HTTP against a listening app (spec 4.1 rule 3): identical
 * requests with one key start exactly one call; duplicates wait for the first (bounded) and replay it; a
 * failure frees the key; an in-flight record of a crashed request expires.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, it } from 'node:test';
import { ApiError } from '../../src/errors/api-error.js';
import { createCall } from '../../src/features/calls/calls.service.js';
import type { CreateCallBody } from '../../src/features/calls/calls.schemas.js';
import { claimFor, idempotencyLifetimeMs, purgeExpired } from '../../src/features/idempotency/idempotency.service.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { ManualClock, addMs, isoTimestamp } from '../../src/lib/clock.js';
import { bodyFingerprint } from '../../src/lib/json.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';
import { createFakeProvider, failures, untilAttempts } from '../support/fake-voice-provider.js';
import { concurrently, listenOnFreePort, postCall, type HttpAnswer } from '../support/http-client.js';
import { until } from '../support/wait.js';

let keyCounter = 0;
const newKey = (label: string) => `race-${label}-${process.pid}-${++keyCounter}`;

function assertSameCreated(answers: readonly HttpAnswer[]): string {
  const id = answers[0]?.body?.id as string;
  assert.match(id, /^call_conv_/);
  for (const answer of answers) {
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal(answer.body.id, id);
    assert.equal(answer.headers.get('location'), `/v1/calls/${id}`);
  }
  return id;
}

const replayedCount = (answers: readonly HttpAnswer[]) =>
  answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true').length;

async function idempotencyRow(t: TestApp, key: string) {
  return t.services.db
    .selectFrom('idempotency_keys')
    .selectAll()
    .where('api_key_id', '=', t.seed.keyId)
    .where('route', '=', 'POST /v1/calls')
    .where('idempotency_key', '=', key)
    .executeTakeFirst();
}

/** The in-flight record a request leaves when its process dies mid-request. */
async function insertInFlightRecord(t: TestApp, key: string, body: unknown, lockedUntil: Date, owner: string) {
  await t.services.db
    .insertInto('idempotency_keys')
    .values({
      api_key_id: t.seed.keyId,
      route: 'POST /v1/calls',
      idempotency_key: key,
      request_hash: bodyFingerprint(body),
      state: 'in_progress',
      owner,
      response_status: null,
      response_body: null,
      response_headers: null,
      locked_until: isoTimestamp(lockedUntil),
      expires_at: null,
      created_at: isoTimestamp(t.services.clock.now()),
    })
    .execute();
}

await forEachDialect('Idempotency-Key under concurrent requests', (dialect) => {
  const fake = createFakeProvider();
  let t: TestApp;
  let url: string;
  before(async () => {
    t = await startTestApp(dialect, { overrides: { providers: createProviderRegistry({ simulator: fake }) } });
    url = await listenOnFreePort(t.app);
  });
  after(async () => t.close());
  beforeEach(() => fake.reset());

  it('20 concurrent identical requests start exactly one call and all answer 201 with its id', async () => {
    fake.defaultStep = { delayMs: 50 };
    const key = newKey('twenty');
    const body = callBody(t);
    const start = await countCalls(t.services);
    const answers = await concurrently(20, () => postCall(url, t.seed.token, body, key));
    assertSameCreated(answers);
    assert.equal(replayedCount(answers), 19);
    assert.equal(await countCalls(t.services), start + 1);
    assert.equal(fake.attempts, 1);
    assert.equal((await idempotencyRow(t, key))?.state, 'completed');
  });

  it('duplicates that arrive while a slow provider works wait for it and replay its answer', async () => {
    fake.defaultStep = { delayMs: 600 };
    const key = newKey('slow');
    const body = callBody(t, { metadata: { attempt: 'slow' } });
    const start = await countCalls(t.services);
    const first = postCall(url, t.seed.token, body, key);
    await untilAttempts(fake, 1);
    assert.equal(fake.inFlight, 1, 'the duplicates are sent while the first request is at the provider');
    const duplicates = await concurrently(5, () => postCall(url, t.seed.token, body, key));
    const answers = [await first, ...duplicates];
    assertSameCreated(answers);
    assert.equal(answers[0]?.headers.get('idempotent-replayed'), null);
    assert.equal(replayedCount(duplicates), 5);
    assert.equal(await countCalls(t.services), start + 1);
    assert.equal(fake.attempts, 1);
  });

  // Certain answers only: after a lost one the key stays held (test/calls/calls.lost-answers.test.ts).
  const failureCases = [
    { failure: failures.unavailable, status: 503, error: 'provider_unavailable' },
    { failure: failures.rejected, status: 502, error: 'provider_error' },
  ] as const;
  for (const { failure, status, error } of failureCases) {
    it(`a provider ${failure.kind} answers ${status} ${error}, stores nothing, and a retry with the key places one call`, async () => {
      fake.steps = [{ failure }];
      const key = newKey(failure.kind);
      const body = callBody(t);
      const start = await countCalls(t.services);

      const failed = await postCall(url, t.seed.token, body, key);
      assert.equal(failed.status, status);
      assert.equal(failed.body.error, error);
      assert.match(failed.body.request_id, /^req_/);
      assert.equal(await countCalls(t.services), start);
      assert.equal(await idempotencyRow(t, key), undefined, 'a failure must free the key');

      const retried = await postCall(url, t.seed.token, body, key);
      assert.equal(retried.status, 201);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
      const replayed = await postCall(url, t.seed.token, body, key);
      assert.equal(replayed.status, 201);
      assert.equal(replayed.body.id, retried.body.id);
      assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
      assert.equal(await countCalls(t.services), start + 1);
      assert.equal(fake.attempts, 2);
    });
  }

  it('when the first request fails, one waiting duplicate runs anew and the others replay it', async () => {
    fake.steps = [{ delayMs: 300, failure: failures.unavailable }];
    fake.defaultStep = { delayMs: 100 };
    const key = newKey('fail-then-wait');
    const body = callBody(t);
    const start = await countCalls(t.services);
    const first = postCall(url, t.seed.token, body, key);
    await untilAttempts(fake, 1);
    const duplicates = await concurrently(5, () => postCall(url, t.seed.token, body, key));
    assert.equal((await first).status, 503);
    assertSameCreated(duplicates);
    assert.equal(replayedCount(duplicates), 4);
    assert.equal(await countCalls(t.services), start + 1);
    assert.equal(fake.attempts, 2);
  });
});

await forEachDialect('Idempotency-Key waits are bounded and in-flight locks expire', (dialect) => {
  const fake = createFakeProvider();
  const clock = new ManualClock();
  const lockMs = 1_000;
  let t: TestApp;
  let url: string;
  before(async () => {
    t = await startTestApp(dialect, {
      env: { CALLGATE_IDEMPOTENCY_WAIT_MS: '300', CALLGATE_IDEMPOTENCY_LOCK_MS: String(lockMs), CALLGATE_PROVIDER_TIMEOUT_MS: '500' },
      overrides: { clock, providers: createProviderRegistry({ simulator: fake }) },
    });
    url = await listenOnFreePort(t.app);
  });
  after(async () => t.close());
  beforeEach(() => fake.reset());

  it('a duplicate waits about CALLGATE_IDEMPOTENCY_WAIT_MS, then gets 503 idempotency_in_progress with Retry-After (a 5xx clients retry); a later retry replays', async () => {
    fake.steps = [{ delayMs: 1_500 }];
    const key = newKey('bounded');
    const body = callBody(t);
    const start = await countCalls(t.services);
    let firstAnswered = false;
    const first = postCall(url, t.seed.token, body, key).finally(() => (firstAnswered = true));
    await untilAttempts(fake, 1);

    const sentAt = Date.now();
    const duplicate = await postCall(url, t.seed.token, body, key);
    const waitedMs = Date.now() - sentAt;
    assert.equal(firstAnswered, false, 'the 503 must come while the first request is still in flight');
    assert.equal(duplicate.status, 503);
    assert.equal(duplicate.body.error, 'idempotency_in_progress');
    assert.match(duplicate.body.message, /still in progress/);
    assert.equal(duplicate.headers.get('retry-after'), '1');
    assert.ok(waitedMs >= 250, `the duplicate answered after ${waitedMs} ms, without waiting for the first`);

    // A different body under the same key is a conflict at once, with its own message.
    const other = await postCall(url, t.seed.token, callBody(t, { to: '+14155550999' }), key);
    assert.equal(other.status, 409);
    assert.equal(other.body.error, 'idempotency_conflict');
    assert.match(other.body.message, /different request body/);

    const created = await first;
    assert.equal(created.status, 201);
    const retried = await postCall(url, t.seed.token, body, key);
    assert.equal(retried.status, 201);
    assert.equal(retried.body.id, created.body.id);
    assert.equal(retried.headers.get('idempotent-replayed'), 'true');
    assert.equal(await countCalls(t.services), start + 1);
    assert.equal(fake.attempts, 1);
  });

  it('an in-flight record left by a process that died before recording a dial locks its key until it expires (503 meanwhile), then a retry takes over', async () => {
    const key = newKey('crashed');
    const body = callBody(t);
    await insertInFlightRecord(t, key, body, addMs(clock.now(), lockMs), 'a-process-that-died');
    const start = await countCalls(t.services);

    const locked = await postCall(url, t.seed.token, body, key);
    assert.equal(locked.status, 503);
    assert.equal(locked.body.error, 'idempotency_in_progress');
    assert.match(locked.body.message, /still in progress/);

    clock.advance(lockMs + 1);
    const retried = await postCall(url, t.seed.token, body, key);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    assert.equal(retried.headers.get('idempotent-replayed'), null);
    const row = await idempotencyRow(t, key);
    assert.equal(row?.state, 'completed');
    assert.notEqual(row?.owner, 'a-process-that-died');
    assert.equal((await postCall(url, t.seed.token, body, key)).body.id, retried.body.id);
    assert.equal(await countCalls(t.services), start + 1);
  });

  it('a request slower than its lock, whose key a retry took over, records no dial and places no call: only the retry dials', async () => {
    const key = newKey('overtaken');
    const body = callBody(t);
    const start = await countCalls(t.services);
    // The first request claims the key, then stalls (a pause, a slow read) before recording its dial.
    const deps = { db: t.services.db, clock, idempotency: t.services.calls.idempotency };
    const slow = await claimFor(deps, { apiKeyId: t.seed.keyId, route: 'POST /v1/calls', key }, body);
    assert.equal(slow.kind, 'owned');

    clock.advance(lockMs + 1);
    const retried = await postCall(url, t.seed.token, body, key);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));

    // The first request goes on: it no longer holds the key, so it neither records a dial nor dials.
    const apiKey = await t.services.db.selectFrom('api_keys').selectAll().where('id', '=', t.seed.keyId).executeTakeFirstOrThrow();
    await assert.rejects(
      createCall(t.services.calls, apiKey, body as CreateCallBody, slow.key),
      (error: unknown) => error instanceof ApiError && error.code === 'idempotency_in_progress' && /took the key over/.test(error.message),
    );
    assert.equal(fake.attempts, 1);
    assert.equal(await countCalls(t.services), start + 1);
    const dials = await t.services.db.selectFrom('dials').select('id').where('idempotency_key', '=', key).execute();
    assert.equal(dials.length, 1);
    assert.equal((await postCall(url, t.seed.token, body, key)).body.id, retried.body.id);
  });

  it('a request whose client gave up on a hung provider keeps its key past the lock: a retry never dials again until the dial is known', async () => {
    let letGo!: () => void;
    const hung = new Promise<void>((resolve) => (letGo = resolve));
    fake.steps = [{ until: hung, failure: failures.timeout }];
    const key = newKey('hung');
    const body = callBody(t);
    const start = await countCalls(t.services);

    const client = new AbortController();
    const abandoned = postCall(url, t.seed.token, body, key, { signal: client.signal }).catch(() => 'aborted');
    await untilAttempts(fake, 1);
    client.abort();
    assert.equal(await abandoned, 'aborted');

    // Past the request's lock the key is still held by its dial: the provider may be placing the call.
    clock.advance(lockMs + 1);
    const whileAsking = await postCall(url, t.seed.token, body, key);
    assert.equal(whileAsking.status, 503, JSON.stringify(whileAsking.body));
    assert.equal(whileAsking.body.error, 'idempotency_in_progress');
    assert.equal(fake.attempts, 1);

    // The hung attempt times out: its answer is lost, and a retry hears that it is being checked.
    letGo();
    const dial = await until('the dial to be checked', async () => {
      const row = await t.services.db.selectFrom('dials').selectAll().where('idempotency_key', '=', key).executeTakeFirst();
      return row?.state === 'checking' ? row : undefined;
    });
    const whileChecking = await postCall(url, t.seed.token, body, key);
    assert.equal(whileChecking.status, 504, JSON.stringify(whileChecking.body));
    assert.equal(whileChecking.body.error, 'provider_timeout');
    assert.match(whileChecking.body.message, new RegExp(`checking with the provider.*${dial.id}`));
    assert.equal(fake.attempts, 1);

    // The provider lists no call for it by the end of the search window: not placed, the key is free.
    clock.advance(Date.parse(dial.search_until) - clock.now().getTime() + 1);
    t.services.jobs.start([t.services.dialJob.name]);
    await t.services.dialJob.pass();
    const ended = await t.services.db.selectFrom('dials').selectAll().where('id', '=', dial.id).executeTakeFirstOrThrow();
    assert.equal(ended.state, 'not_placed');
    const retried = await postCall(url, t.seed.token, body, key);
    assert.equal(retried.status, 201, JSON.stringify(retried.body));
    assert.equal(fake.attempts, 2);
    const replay = await postCall(url, t.seed.token, body, key);
    assert.equal(replay.body.id, retried.body.id);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(await countCalls(t.services), start + 1);
  });

  it('purgeExpired removes completed records past 24 hours and abandoned in-flight ones, and keeps fresh ones', async () => {
    const oldKey = newKey('old');
    const freshKey = newKey('fresh');
    const body = callBody(t);
    assert.equal((await postCall(url, t.seed.token, body, oldKey)).status, 201);
    clock.advance(60 * 60 * 1000);
    const fresh = await postCall(url, t.seed.token, body, freshKey);
    assert.equal(fresh.status, 201);
    clock.advance(idempotencyLifetimeMs - 60 * 60 * 1000 + 1);

    const abandonedKey = newKey('abandoned');
    const liveKey = newKey('in-flight');
    const now = clock.now();
    await insertInFlightRecord(t, abandonedKey, body, addMs(now, -lockMs - 1), 'someone');
    await insertInFlightRecord(t, liveKey, body, addMs(now, lockMs), 'someone');

    const purged = await purgeExpired(t.services.db, clock, t.services.calls.idempotency);
    assert.ok(purged >= 2, `purged ${purged}`);
    assert.equal(await idempotencyRow(t, oldKey), undefined);
    assert.equal(await idempotencyRow(t, abandonedKey), undefined);
    assert.equal((await idempotencyRow(t, freshKey))?.state, 'completed');
    assert.equal((await idempotencyRow(t, liveKey))?.state, 'in_progress');

    // The fresh key still replays; the purged one is free for a new, different operation (rule 5).
    const replay = await postCall(url, t.seed.token, body, freshKey);
    assert.equal(replay.body.id, fresh.body.id);
    const reused = await postCall(url, t.seed.token, callBody(t, { to: '+14155550777' }), oldKey);
    assert.equal(reused.status, 201);
    assert.equal(reused.headers.get('idempotent-replayed'), null);
  });
});
