/**
 * Idempotency across real server processes (`node --import tsx src/server.ts`): on PostgreSQL, two
 * processes sharing one database start exactly one call per key; on both databases, a call acknowledged
 * with 201 survives kill -9 and is replayed after a restart.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { countCalls, seedAccount, testEnvDefaults, type SeededAccount } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { concurrently, postCall } from '../support/http-client.js';

/** Seeds an account, agent and key with the services of this process, then lets go of the database. */
async function seedDatabase(database: TestDatabase): Promise<SeededAccount> {
  const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
  try {
    return await seedAccount(services);
  } finally {
    await services.close();
  }
}

/**
 * Holds an exclusive lock on idempotency_keys while `send` fires its requests, until `waiting` of them are
 * blocked on it (or ten seconds have passed); then lets go, so the blocked requests race at the same instant.
 */
async function raceBehindLock<T>(url: string, waiting: number, send: () => Promise<T>): Promise<{ result: T; blocked: number }> {
  const holder = new pg.Client({ connectionString: url });
  // A second session watches: pg_stat_activity is read once per transaction, so the holder would see a stale view.
  const watcher = new pg.Client({ connectionString: url });
  await Promise.all([holder.connect(), watcher.connect()]);
  try {
    await holder.query('begin');
    await holder.query('lock table idempotency_keys in exclusive mode');
    const sent = send();
    sent.catch(() => undefined); // awaited below; a failure must not count as unhandled meanwhile
    const deadline = Date.now() + 10_000;
    let blocked = 0;
    for (;;) {
      const { rows } = await watcher.query<{ n: string }>(
        `select count(*) as n from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into "idempotency_keys"%'`,
      );
      blocked = Number(rows[0]?.n ?? 0);
      if (blocked >= waiting || Date.now() > deadline) break;
      await sleep(20);
    }
    await holder.query('commit');
    return { result: await sent, blocked };
  } finally {
    await Promise.all([holder.end(), watcher.end()]);
  }
}

async function callsIn(database: TestDatabase): Promise<number> {
  const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
  try {
    return await countCalls(services);
  } finally {
    await services.close();
  }
}

await forEachDialect('Idempotency-Key across real server processes', (dialect) => {
  let database: TestDatabase;
  let seed: SeededAccount;
  const processes = new Set<ServerProcess>();
  const start = async () => {
    const server = await startServerProcess({ env: database.env });
    processes.add(server);
    return server;
  };

  before(async () => {
    database = await createTestDatabase(dialect);
    seed = await seedDatabase(database);
  });
  after(async () => {
    await Promise.all([...processes].map((server) => server.kill()));
    await database.drop();
  });

  if (dialect === 'postgres') {
    it('two processes on one database: 20 concurrent identical requests per key start exactly one call', async () => {
      const [a, b] = await Promise.all([start(), start()]);
      const keys = ['multi-process-1', 'multi-process-2', 'multi-process-3'];
      const body = { agent_id: seed.agentId, to: '+14155550123' };
      // Both pools (10 connections each) fill up with requests blocked on the lock; they then race at once.
      const url = database.config.dialect === 'postgres' ? database.config.url : '';
      const { result: rounds, blocked } = await raceBehindLock(url, 20, () =>
        Promise.all(keys.map((key) => concurrently(20, (i) => postCall((i % 2 === 0 ? a : b).url, seed.token, body, key)))),
      );
      assert.equal(blocked, 20, 'both processes should have had a full pool of requests waiting to race');
      const ids = new Set<string>();
      for (const answers of rounds) {
        const id = answers[0]?.body?.id as string;
        for (const answer of answers) {
          assert.equal(answer.status, 201, JSON.stringify(answer.body));
          assert.equal(answer.body.id, id);
        }
        assert.equal(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true').length, 19);
        ids.add(id);
      }
      assert.equal(ids.size, keys.length);
      await Promise.all([a.stop(), b.stop()]);
      assert.equal(await callsIn(database), keys.length);
    });
  }

  it('a 201 survives kill -9: after a restart the same key replays the same call', async () => {
    const callsBefore = await callsIn(database);
    const key = 'survives-kill-9';
    const body = { agent_id: seed.agentId, to: '+14155550124', metadata: { crash: true } };
    const first = await start();
    const created = await postCall(first.url, seed.token, body, key);
    await first.kill();
    assert.equal(created.status, 201, JSON.stringify(created.body));

    const second = await start();
    const replayed = await postCall(second.url, seed.token, body, key);
    assert.equal(replayed.status, 201, JSON.stringify(replayed.body));
    assert.equal(replayed.body.id, created.body.id);
    assert.deepEqual(replayed.body, created.body);
    assert.equal(replayed.headers.get('idempotent-replayed'), 'true');
    const read = await fetch(`${second.url}/v1/calls/${created.body.id as string}`, {
      headers: { authorization: `Bearer ${seed.token}` },
    });
    assert.equal(read.status, 200);
    await second.stop();
    assert.equal(await callsIn(database), callsBefore + 1);
  });
});
