/**
 * SQLite's counterpart of a lost database: writes that fail. Tests run as root, where an unwritable folder
 * or file still takes writes, so the faults are made otherwise: a real full disk (the data folder on a
 * small tmpfs, filled up mid-run by a real server process; skipped with its reason where mounting is not
 * allowed), and, in process, SQLite refusing writes on the live connection: `PRAGMA query_only` gives
 * SQLITE_READONLY, `PRAGMA max_page_count` at the file's size SQLITE_FULL. Requests then get 503
 * database_unavailable in the catalogue's shape, the worker keeps going, and nothing acknowledged is lost.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { seedAccount, testEnvDefaults } from '../support/test-app.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import type { LightMyRequestResponse } from 'fastify';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { callBody, countCalls, startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { createFakeProvider, untilAttempts } from '../support/fake-voice-provider.js';
import { until } from '../support/wait.js';

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

/** A 16 MB tmpfs to fill up, or the reason none can be mounted here. */
function mountSmallDisk(): { dir: string; unmount(): void } | string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    fs.rmdirSync(dir);
    return `cannot mount a small tmpfs here (${(error as Error).message.split('\n')[0]})`;
  }
  return {
    dir,
    unmount() {
      execFileSync('umount', [dir]);
      fs.rmdirSync(dir);
    },
  };
}

// Probed once here (mounted and let go at once), so a test run that filters this test out leaves no mount.
const probe = mountSmallDisk();
if (typeof probe !== 'string') probe.unmount();

it('SQLite on a disk that fills up mid-run: a real server process answers 503, lives, recovers and loses no event', {
  skip: typeof probe === 'string' ? probe : false,
}, async () => {
  const disk = mountSmallDisk();
  if (typeof disk === 'string') assert.fail(disk);
  const receiver = await startWebhookReceiver();
  let server: ServerProcess | undefined;
  try {
    const env = { ...testEnvDefaults, CALLGATE_DATA_DIR: disk.dir };
    const services = await createServices(loadConfig(env));
    const seed = await seedAccount(services);
    await createEndpoint(services.db, services.clock, true, { accountId: seed.accountId, url: receiver.url });
    await services.close();
    server = await startServerProcess({ env: { CALLGATE_DATA_DIR: disk.dir, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    let exited = false;
    void server.exited.then(() => (exited = true));
    const post = async (key: string) => {
      const res = await fetch(`${server!.url}/v1/calls`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${seed.token}`, 'idempotency-key': key },
        body: JSON.stringify({ agent_id: seed.agentId, to: '+14155550123', metadata: { filler: 'x'.repeat(4_000) } }),
      });
      return {
        status: res.status,
        requestId: res.headers.get('x-request-id'),
        body: (await res.json()) as { id: string; error: string; request_id: string },
      };
    };
    const acknowledged: string[] = [];
    for (let index = 0; index < 5; index++) {
      const answer = await post(`before-${index}`);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      acknowledged.push(answer.body.id);
    }

    // Fill the disk, as another program writing there would.
    const filler = path.join(disk.dir, 'filler');
    const fd = fs.openSync(filler, 'w');
    try {
      for (;;) fs.writeSync(fd, Buffer.alloc(64 * 1024));
    } catch (error) {
      assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
    } finally {
      fs.closeSync(fd);
    }
    let refused: { key: string; answer: Awaited<ReturnType<typeof post>> } | undefined;
    for (let index = 0; index < 3_000 && !refused; index++) {
      const answer = await post(`full-${index}`);
      if (answer.status === 201) acknowledged.push(answer.body.id);
      else refused = { key: `full-${index}`, answer };
    }
    assert.ok(refused, 'the disk never filled up');
    assert.equal(refused.answer.status, 503, JSON.stringify(refused.answer.body));
    assert.equal(refused.answer.body.error, 'database_unavailable');
    assert.equal(refused.answer.requestId, refused.answer.body.request_id);
    assert.ok(!exited, `the process died:\n${server.output()}`);

    fs.rmSync(filler);
    // The refused key gets its one call (stored late, or placed anew once the key was freed).
    const retried = await until('the refused key to succeed', async () => {
      const answer = await post(refused!.key);
      return answer.status === 201 ? answer : undefined;
    });
    acknowledged.push(retried.body.id);
    const afterwards = await post('after');
    assert.equal(afterwards.status, 201, JSON.stringify(afterwards.body));
    acknowledged.push(afterwards.body.id);
    // Outcomes whose recording failed are looked at again after their 30 s lease.
    await until(
      'an event for every acknowledged call',
      async () => {
        const seen = new Set(receiver.received.map((hook) => (JSON.parse(hook.body) as { data: { id: string } }).data.id));
        return acknowledged.every((id) => seen.has(id)) ? true : undefined;
      },
      90_000,
    );
    assert.ok(!exited, `the process died:\n${server.output()}`);
  } finally {
    await server?.stop();
    await receiver.close();
    disk.unmount();
  }
});
