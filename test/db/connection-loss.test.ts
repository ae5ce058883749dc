/**
 * Losing the PostgreSQL connections: real server processes reach the database through a TCP proxy
 * (test/support/tcp-proxy.ts) that drops every connection and refuses new ones for a while, as a network
 * fault or a restarting server would. For the roles api, worker and both, the process must live through it,
 * answer in the catalogue's shape meanwhile (503 database_unavailable), answer 201 again within seconds of
 * the database coming back, and lose no acknowledged call or outcome event.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { seedAccount, testEnvDefaults, type SeededAccount } from '../support/test-app.js';
import { createTestDatabase, postgresUnavailableReason, type TestDatabase } from '../support/test-database.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { until } from '../support/wait.js';

const requirePostgres = process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1';
const unavailable = await postgresUnavailableReason();
if (unavailable && requirePostgres) throw new Error(`CALLGATE_TEST_REQUIRE_POSTGRES=1 but ${unavailable}`);

interface Answer {
  readonly key: string;
  readonly status: number;
  readonly requestIdHeader: string | null;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
  readonly at: number;
}

/** The catalogue's error shape: {error, message, request_id}, the id also in X-Request-Id. */
function assertCatalogueError(answer: Pick<Answer, 'status' | 'body' | 'requestIdHeader'>, code: string, status: number): void {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assert.equal(answer.body?.error, code, JSON.stringify(answer.body));
  assert.equal(typeof answer.body.message, 'string');
  assert.match(answer.body.request_id, /^req_/);
  assert.equal(answer.requestIdHeader, answer.body.request_id);
}

await describe('Connection loss on PostgreSQL (real processes through a TCP proxy)', { skip: unavailable ?? false }, () => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  let proxy: TcpProxy;
  let seed: SeededAccount;
  const processes = new Set<ServerProcess>();

  before(async () => {
    database = await createTestDatabase('postgres', { migrated: true });
    receiver = await startWebhookReceiver();
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      seed = await seedAccount(services);
      await createEndpoint(services.db, services.clock, true, { accountId: seed.accountId, url: receiver.url });
    } finally {
      await services.close();
    }
  });
  afterEach(async () => {
    proxy?.resume();
    await Promise.all([...processes].map((server) => server.stop()));
    // A database that went away and came back is expected: warnings only, never an error-level line.
    const errors = [...processes].flatMap((server) =>
      server
        .output()
        .split('\n')
        .filter((line) => /"level":(50|60)\b/.test(line)),
    );
    processes.clear();
    await proxy?.close();
    assert.deepEqual(errors, [], 'error-level log lines during a database outage');
  });
  after(async () => {
    await receiver?.close();
    await database?.drop();
  });

  const start = async (roles: string, throughProxy: boolean): Promise<ServerProcess & { alive(): boolean }> => {
    const env: Record<string, string> = { ...database.env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true', CALLGATE_ROLES: roles };
    if (throughProxy) env.DATABASE_URL = proxy.urlThrough(database.env.DATABASE_URL!);
    const server = await startServerProcess({ env });
    processes.add(server);
    let exited = false;
    void server.exited.then(() => {
      exited = true;
    });
    return Object.assign(server, { alive: () => !exited });
  };

  const post = async (url: string, key: string): Promise<Answer> => {
    const res = await fetch(`${url}/v1/calls`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${seed.token}`, 'idempotency-key': key },
      body: JSON.stringify({ agent_id: seed.agentId, to: '+14155550123' }),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    return { key, status: res.status, requestIdHeader: res.headers.get('x-request-id'), body: JSON.parse(text), at: Date.now() };
  };

  /** POSTs from `lanes` loops, each with new keys, until stopped; every answer is kept. */
  const startLoad = (url: string, lanes = 4) => {
    const answers: Answer[] = [];
    let stopped = false;
    let next = 0;
    const done = Promise.all(
      Array.from({ length: lanes }, async () => {
        while (!stopped) {
          const key = `load-${process.pid}-${Date.now()}-${next++}`;
          // No answer at all (the process died) is kept as status 0, so that the test says why.
          answers.push(
            await post(url, key).catch((error: Error) => ({
              key,
              status: 0,
              requestIdHeader: null,
              body: { fetch: error.message },
              at: Date.now(),
            })),
          );
          if (answers.at(-1)!.status === 0) await sleep(50);
        }
      }),
    );
    return {
      answers,
      async stop() {
        stopped = true;
        await done;
      },
    };
  };

  /**
   * Drops every connection under load and keeps the database away until the process has answered 503 a
   * few times (and /healthz too); then lets it back and waits for a 201. Returns every answer.
   */
  const outageUnderLoad = async (server: ServerProcess & { alive(): boolean }): Promise<Answer[]> => {
    const load = startLoad(server.url);
    await until('calls acknowledged before the drop', () => (load.answers.filter((a) => a.status === 201).length >= 10 ? true : undefined));
    proxy.pause();
    proxy.dropAll();
    const droppedAt = Date.now();
    await until('503 answers while the database is away', () =>
      load.answers.filter((a) => a.at > droppedAt + 200 && a.status !== 201).length >= 5 ? true : undefined,
    );
    const health = await fetch(`${server.url}/healthz`).catch((error: Error) =>
      assert.fail(`GET /healthz got no answer (${error.message}); the process output:\n${server.output()}`),
    );
    assertCatalogueError(
      { status: health.status, body: await health.json(), requestIdHeader: health.headers.get('x-request-id') },
      'database_unavailable',
      503,
    );
    assert.ok(server.alive(), `the process died:\n${server.output()}`);
    proxy.resume();
    const backAt = Date.now();
    const first201 = await until(
      'a 201 once the database is back',
      () => load.answers.find((a) => a.at > backAt && a.status === 201),
      15_000,
    );
    await load.stop();
    assert.ok(first201.at - backAt < 10_000, `answered 201 only ${first201.at - backAt} ms after the database came back`);
    assert.ok(server.alive(), `the process died:\n${server.output()}`);
    for (const answer of load.answers.filter((a) => a.status !== 201)) assertCatalogueError(answer, 'database_unavailable', 503);
    const health2 = await fetch(`${server.url}/healthz`);
    assert.equal(health2.status, 200);
    return load.answers;
  };

  /**
   * Retries every refused key with the same key until it gets its 201: each key ends with exactly one call
   * (a call placed before the drop but stored after it is replayed, never placed twice).
   */
  const retryRefused = async (url: string, answers: readonly Answer[]): Promise<string[]> => {
    const callIds = new Map<string, string>();
    for (const answer of answers) if (answer.status === 201) callIds.set(answer.key, answer.body.id);
    for (const answer of answers) {
      if (answer.status === 201) continue;
      const retried = await until(`a 201 on retry of ${answer.key}`, async () => {
        const again = await post(url, answer.key);
        if (again.status === 201) return again;
        // Only a key whose call is still being stored may be held meanwhile.
        if (again.status !== 409) assertCatalogueError(again, 'database_unavailable', 503);
        await sleep(200);
        return undefined;
      });
      callIds.set(answer.key, retried.body.id);
    }
    return [...callIds.values()];
  };

  const assertOneCallPerKey = async (expected: number) => {
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      const rows = await services.db.selectFrom('calls').select('id').execute();
      return rows.length >= expected ? rows.map((row) => row.id) : assert.fail(`only ${rows.length} calls stored of ${expected}`);
    } finally {
      await services.close();
    }
  };

  /** The backend pids of the connections of this database LISTENing for webhook wake-ups now. */
  const listeners = async (): Promise<number[]> => {
    const client = new pg.Client({ connectionString: database.env.DATABASE_URL });
    await client.connect();
    try {
      const result = await client.query<{ pid: number }>(
        "select pid from pg_stat_activity where datname = current_database() and query like 'LISTEN %' and pid <> pg_backend_pid()",
      );
      return result.rows.map((row) => row.pid);
    } finally {
      await client.end();
    }
  };

  /** Waits until the receiver has had an outcome event for every call in `callIds`. */
  const outcomesDelivered = (callIds: readonly string[], timeoutMs = 90_000) =>
    until(
      `outcome events for ${callIds.length} calls`,
      () => {
        const seen = new Set(receiver.received.map((hook) => (JSON.parse(hook.body) as { data: { id: string } }).data.id));
        return callIds.every((id) => seen.has(id)) ? true : undefined;
      },
      timeoutMs,
    );

  it('api,worker: lives through a drop under load and one while idle, and loses no call or outcome event', async () => {
    proxy = await startTcpProxy();
    const server = await start('api,worker', true);
    const storedBefore = (await assertOneCallPerKey(0)).length;
    const answers = await outageUnderLoad(server);
    const callIds = await retryRefused(server.url, answers);
    // Every key made one call, no more: stored calls are exactly those the keys got.
    const stored = await assertOneCallPerKey(storedBefore + callIds.length);
    assert.equal(stored.length, storedBefore + callIds.length, 'a key placed a second call');
    await outcomesDelivered(callIds);

    // Idle now: the pool's idle clients and the LISTEN connection drop.
    const [listening] = await until('a LISTEN connection', async () => {
      const pids = await listeners();
      return pids.length === 1 ? pids : undefined;
    });
    proxy.dropAll();
    await until('the LISTEN connection to come back', async () => {
      const pids = await listeners();
      return pids.length === 1 && pids[0] !== listening ? true : undefined;
    });
    const answer = await post(server.url, `idle-${Date.now()}`);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    await outcomesDelivered([answer.body.id], 30_000);
    assert.ok(server.alive(), `the process died:\n${server.output()}`);
  });

  it('api alone: lives through a drop under load, answers 503 in the catalogue shape, then 201 again', async () => {
    proxy = await startTcpProxy();
    const server = await start('api', true);
    const answers = await outageUnderLoad(server);
    const callIds = await retryRefused(server.url, answers);
    const idle = await post(server.url, `idle-${Date.now()}`);
    proxy.dropAll();
    const afterIdleDrop = await post(server.url, `idle2-${Date.now()}`);
    assert.equal(afterIdleDrop.status, 201, JSON.stringify(afterIdleDrop.body));
    assert.ok(server.alive(), `the process died:\n${server.output()}`);
    // A worker elsewhere (direct to the database) finds every acknowledged call and sends its outcome.
    await start('worker', false);
    await outcomesDelivered([...callIds, idle.body.id, afterIdleDrop.body.id]);
  });

  it('worker alone: keeps running while the database is away, reconnects (LISTEN included) and delivers', async () => {
    proxy = await startTcpProxy();
    const api = await start('api', false);
    const worker = await start('worker', true);
    // The worker holds its LISTEN connection through the proxy once its dispatcher has started.
    await until('the worker to LISTEN', async () => ((await listeners()).length > 0 ? true : undefined));
    proxy.pause();
    proxy.dropAll();
    await until('the worker to warn that its listener lost the connection', () =>
      worker.output().includes('webhook wake-up listener lost its connection') ? true : undefined,
    ).catch((error: Error) => assert.fail(`${error.message}:\n${worker.output()}`));
    // A failed attempt to LISTEN again shows the process lived on past the drop and keeps trying.
    await until('a failed reconnection attempt', async () => {
      if (!worker.alive())
        assert.fail(`the worker exited (${JSON.stringify(await worker.exited)}) while the database was away:\n${worker.output()}`);
      return worker.output().includes('could not LISTEN for webhook wake-ups') ? true : undefined;
    });
    assert.ok(worker.alive(), `the worker exited:\n${worker.output()}`);

    // Calls acknowledged meanwhile by the api process are ended and delivered once the worker is back.
    const acknowledged: string[] = [];
    for (let index = 0; index < 5; index++) {
      const answer = await post(api.url, `worker-away-${Date.now()}-${index}`);
      assert.equal(answer.status, 201, JSON.stringify(answer.body));
      acknowledged.push(answer.body.id);
    }
    proxy.resume();
    await outcomesDelivered(acknowledged, 30_000);
    await until('the listener to be connected again', () =>
      worker.output().includes('webhook wake-up listener is connected again') ? true : undefined,
    );
    assert.equal((await listeners()).length, 1);
    // And a new event reaches it through LISTEN/NOTIFY again (or its sweep), while idle drops go on.
    proxy.dropAll();
    const late = await post(api.url, `worker-back-${Date.now()}`);
    await outcomesDelivered([late.body.id], 30_000);
    assert.ok(worker.alive(), `the worker exited:\n${worker.output()}`);
  });
});
