/**
 * SQLite's counterpart of a lost database: writes refused by the driver itself. Tests run as root, where
 * an unwritable folder or file still takes writes, so the faults come from SQLite on the live connection:
 * `PRAGMA query_only` makes every write fail with SQLITE_READONLY, and `PRAGMA max_page_count` at the
 * file's size makes the next growth fail with SQLITE_FULL (a full disk). Requests then get 503
 * database_unavailable in the catalogue's shape, the worker keeps going, and nothing acknowledged is lost.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { LightMyRequestResponse } from 'fastify';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { createEndpoint } from '../../src/features/webhooks/endpoints.service.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../helpers/test-app.js';
import { startWebhookReceiver } from '../helpers/webhook-receiver.js';
import { createFakeProvider, untilAttempts } from '../idempotency/fake-provider.js';

function sqliteOf(t: TestApp) {
  const { database } = t.services;
  if (database.dialect !== 'sqlite') throw new Error('a SQLite test app was expected');
  return database.sqlite;
}

function assertDatabaseUnavailable(res: LightMyRequestResponse): void {
  assert.equal(res.statusCode, 503, res.body);
  const body = res.json<{ error: string; message: string; request_id: string }>();
  assert.equal(body.error, 'database_unavailable');
  assert.match(body.message, /Retry with backoff|it is stored as soon as it is back/);
  assert.match(body.request_id, /^req_/);
  assert.equal(res.headers['x-request-id'], body.request_id);
  assert.equal(res.headers['retry-after'], '2');
}

async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

it('SQLite read-only or full: 503 database_unavailable, the worker carries on, and every acknowledged call gets its event', async () => {
  const t = await startTestApp('sqlite', { startWorker: true });
  const receiver = await startWebhookReceiver();
  const sqlite = sqliteOf(t);
  try {
    await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
    const acknowledged: string[] = [];
    for (let index = 0; index < 5; index++) {
      const res = await t.createCall(callBody(t), { idempotencyKey: `before-${index}` });
      assert.equal(res.statusCode, 201, res.body);
      acknowledged.push(res.json<{ id: string }>().id);
    }

    sqlite.pragma('query_only = 1');
    assertDatabaseUnavailable(await t.createCall(callBody(t), { idempotencyKey: 'readonly' }));
    assertDatabaseUnavailable(await t.createCall(callBody(t)));
    sqlite.pragma('query_only = 0');

    // The file may not grow: the first write that needs a new page fails as on a full disk.
    sqlite.pragma(`max_page_count = ${Number(sqlite.pragma('page_count', { simple: true }))}`);
    let full: LightMyRequestResponse | undefined;
    for (let index = 0; index < 2_000 && !full; index++) {
      const res = await t.createCall(callBody(t, { metadata: { filler: 'x'.repeat(4_000) } }), { idempotencyKey: `full-${index}` });
      if (res.statusCode === 201) acknowledged.push(res.json<{ id: string }>().id);
      else full = res;
    }
    assert.ok(full, 'the database never filled up');
    assertDatabaseUnavailable(full);
    sqlite.pragma('max_page_count = 1073741823');

    const after = await t.createCall(callBody(t), { idempotencyKey: 'after' });
    assert.equal(after.statusCode, 201, after.body);
    acknowledged.push(after.json<{ id: string }>().id);
    // A key refused during the fault is free again (or its first request replays): never a second call.
    const retried = await t.createCall(callBody(t), { idempotencyKey: 'readonly' });
    assert.equal(retried.statusCode, 201, retried.body);

    // The monitor and dispatcher failed to write meanwhile; they carried on, and every call's event arrives.
    await until('an event for every acknowledged call', async () => {
      const seen = new Set(receiver.received.map((hook) => (JSON.parse(hook.body) as { data: { id: string } }).data.id));
      return acknowledged.every((id) => seen.has(id)) ? true : undefined;
    });
  } finally {
    sqlite.pragma('query_only = 0');
    await receiver.close();
    await t.close();
  }
});

it('SQLite read-only after the provider placed the call: 503, then the same Idempotency-Key gets that call, never a second one', async () => {
  const fake = createFakeProvider();
  let letGo!: () => void;
  fake.steps = [{ until: new Promise<void>((resolve) => (letGo = resolve)) }];
  const t = await startTestApp('sqlite', { overrides: { providers: createProviderRegistry({ simulator: fake }) } });
  const sqlite = sqliteOf(t);
  try {
    const first = t.createCall(callBody(t), { idempotencyKey: 'placed-then-readonly' });
    await untilAttempts(fake, 1);
    // The key is held and the provider is placing the call; now the database stops taking writes.
    sqlite.pragma('query_only = 1');
    letGo();
    const refused = await first;
    assertDatabaseUnavailable(refused);
    const callId = /call_conv_\w+/.exec(refused.json<{ message: string }>().message)?.[0];
    assert.ok(callId, `the message names the placed call: ${refused.body}`);
    assertDatabaseUnavailable(await t.createCall(callBody(t), { idempotencyKey: 'placed-then-readonly' }));

    sqlite.pragma('query_only = 0');
    const replayed = await until('the placed call on retry', async () => {
      const res = await t.createCall(callBody(t), { idempotencyKey: 'placed-then-readonly' });
      if (res.statusCode === 201) return res;
      assert.equal(res.statusCode, 409, res.body);
      return undefined;
    });
    assert.equal(replayed.json<{ id: string }>().id, callId);
    assert.equal(fake.attempts, 1, 'a second call was placed');
    assert.equal(await countCalls(t.services), 1);
  } finally {
    letGo();
    sqlite.pragma('query_only = 0');
    await t.close();
  }
});
