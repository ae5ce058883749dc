/**
 * The account concurrency limit across real server processes (`node --import tsx src/server.ts`) on one
 * PostgreSQL database: two API processes take single calls from clients that retry their 429s, while two
 * worker processes (each stopped for a moment while the other has not dialed yet, so that both do) dial a
 * batch of the same account and record every call's end. At no instant are more of the account's calls
 * under way than its max_concurrent_calls.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { setMaxConcurrentCalls } from '../../src/features/identity/accounts.service.js';
import { highestOverlap, numbers, recipientsFor } from '../support/batch-client.js';
import { letEveryWorkerDial, workerDialed } from '../support/batch-workers.js';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { seedAccount, testEnvDefaults, type SeededAccount } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/wait.js';

const limit = 3;
const callMs = 300;
const clientsPerApi = 2;
const callsPerClient = 4;
const batchSize = 24;

async function request(
  method: 'GET' | 'POST',
  url: string,
  token: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; json: Record<string, any> }> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, json: (await res.json()) as Record<string, any> };
}

await forEachDialect('The account concurrency limit across two API and two worker processes', (dialect) => {
  if (dialect === 'sqlite') {
    // Several processes share one database on PostgreSQL only (docs/deployment.md); the SQLite runs are in-process.
    it('runs on PostgreSQL', { skip: 'several processes share a PostgreSQL database only' });
    return;
  }
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let seed: SeededAccount;
  const running: ServerProcess[] = [];

  before(async () => {
    database = await createTestDatabase(dialect);
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      seed = await seedAccount(services);
      await setMaxConcurrentCalls(services.db, seed.accountId, limit);
    } finally {
      await services.close();
    }
    handle = openDatabase(database.config);
  });
  after(async () => {
    await Promise.all(running.map((server) => server.stop()));
    await handle?.destroy();
    await database?.drop();
  });

  it(`never has more than max_concurrent_calls (${limit}) calls of the account under way`, async () => {
    const env = { ...database.env, CALLGATE_SIMULATOR_DELAY_MS: String(callMs) };
    const start = async (roles: string, extra: Record<string, string> = {}) => {
      const server = await startServerProcess({ env: { ...env, CALLGATE_ROLES: roles, ...extra } });
      running.push(server);
      return server;
    };
    const apis = await Promise.all([start('api'), start('api')]);
    const workers = await Promise.all([start('worker', { CALLGATE_LOG_LEVEL: 'debug' }), start('worker', { CALLGATE_LOG_LEVEL: 'debug' })]);

    const created = await request('POST', `${apis[0]!.url}/v1/batches`, seed.token, {
      agent_id: seed.agentId,
      max_concurrency: 5,
      recipients: recipientsFor(numbers(batchSize)),
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const batchId = created.json.id as string;

    // Clients on both API processes, each placing its calls one after another and retrying a 429 with the
    // same Idempotency-Key until it is placed.
    const refusals = apis.map(() => 0);
    const placedBy = apis.map(() => 0);
    const client = async (apiIndex: number, clientIndex: number) => {
      const api = apis[apiIndex]!;
      for (let call = 0; call < callsPerClient; call++) {
        const key = `api${apiIndex}-client${clientIndex}-call${call}`;
        const to = `+1415557${apiIndex}${clientIndex}${String(call).padStart(2, '0')}`;
        await until(
          `call ${key} to be placed`,
          async () => {
            const res = await request(
              'POST',
              `${api.url}/v1/calls`,
              seed.token,
              { agent_id: seed.agentId, to },
              { 'idempotency-key': key },
            );
            if (res.status === 429) {
              assert.equal(res.json.error, 'concurrency_limit_exceeded');
              assert.equal(res.headers.get('retry-after'), '5');
              refusals[apiIndex]! += 1;
              return undefined;
            }
            assert.equal(res.status, 201, JSON.stringify(res.json));
            placedBy[apiIndex]! += 1;
            return true;
          },
          120_000,
        );
      }
    };
    // Both workers dial the account's calls (one is stopped for a moment while the other has not), before
    // the clients start: while one worker is stopped, clients retrying every few milliseconds would take
    // each slot the other worker's monitor frees, and that worker might never dial (a CI run saw it).
    await until('a first dial', () => (workers.some(workerDialed) ? true : undefined), 60_000);
    await letEveryWorkerDial(handle.db, batchId, workers);
    for (const [index, worker] of workers.entries())
      assert.ok(workerDialed(worker), `worker ${index + 1} dialed nothing:\n${worker.output().slice(-2000)}`);
    // The rest of the batch is dialed while the clients place their calls.
    await Promise.all(
      apis.flatMap((_, apiIndex) => Array.from({ length: clientsPerApi }, (__, clientIndex) => client(apiIndex, clientIndex))),
    );

    const batch = await until(
      'the batch to complete',
      async () => {
        const now = (await request('GET', `${apis[1]!.url}/v1/batches/${batchId}`, seed.token)).json;
        return now.status === 'completed' ? now : undefined;
      },
      120_000,
    );
    assert.equal(batch.counts.completed, batchSize, JSON.stringify(batch.counts));
    const singles = clientsPerApi * callsPerClient * apis.length;
    const calls = await until('every call to end', async () => {
      const rows = await handle.db
        .selectFrom('calls')
        .select(['created_at', 'ended_at', 'status'])
        .where('account_id', '=', seed.accountId)
        .execute();
      return rows.length === singles + batchSize && rows.every((row) => row.status === 'completed') ? rows : undefined;
    });

    // Each call from its creation to its end as the simulator made it: its slot was taken before it was
    // created and freed only after a worker recorded that end, so these spans lie within the slots.
    const overlap = highestOverlap(calls.map((call) => ({ start: Date.parse(call.created_at), end: Date.parse(call.ended_at!) })));
    assert.ok(overlap <= limit, `${overlap} calls of the account were under way at once`);
    assert.ok(overlap >= 2, `the limit was never approached (${overlap})`);
    for (const [index, placed] of placedBy.entries()) assert.equal(placed, clientsPerApi * callsPerClient, `API process ${index + 1}`);
    assert.ok(refusals.reduce((a, b) => a + b, 0) > 0, 'some requests met the limit');
    const slots = await handle.db.selectFrom('call_slots').select('id').execute();
    assert.deepEqual(slots, [], 'every slot was given back');
    console.log(`highest overlap ${overlap} of ${limit}; 429s per API process: ${refusals.join(', ')}`);
  });
});
