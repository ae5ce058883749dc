/**
 * The deployment docs/deployment.md describes, as real processes: three API processes and two workers
 * (`node --import tsx src/server.ts`, CALLGATE_ROLES=api or worker) on one PostgreSQL database, with the
 * rate-limit counters in Redis. What must hold across processes: the per-key limit is exact, one
 * Idempotency-Key gives one call at the provider, a key revoked by the CLI is refused by every process at its
 * next request, and a worker killed with kill -9 mid-delivery loses no event and never has an attempt of a
 * delivery under way beside another. PostgreSQL only: one SQLite file is not shared by several servers.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, it } from 'node:test';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { openDatabase, type Db } from '../../src/db/database.js';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { enqueueEvents } from '../../src/features/webhook-delivery/fan-out.service.js';
import { systemClock } from '../../src/lib/clock.js';
import { cliEnv, spawnCli } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { apiKey as elevenLabsKey, elevenLabsEnv } from '../support/elevenlabs-fixtures.js';
import { type FakeElevenLabs, startFakeElevenLabs } from '../support/fake-elevenlabs.js';
import { concurrently, type HttpAnswer, postCall } from '../support/http-client.js';
import { startLocalServer, type LocalServer } from '../support/local-server.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { seedAccount, testEnvDefaults, type SeededAccount } from '../support/test-app.js';
import { createTestDatabase, type Dialect, type TestDatabase } from '../support/test-database.js';
import { redisHost, redisPort, redisSkipReason } from '../support/redis.js';
import { until } from '../support/wait.js';

const limitPerMinute = 25;

/**
 * A webhook receiver that counts, per webhook-id, the requests under way (from their arrival until their
 * answer is sent or their connection closes, as when the sending process dies): two at once for one id
 * would be two attempts of one delivery at the same time.
 */
interface CountingReceiver {
  readonly url: string;
  readonly server: LocalServer;
  /** Every request, in arrival order; `answered` once a 200 was sent, `cut` when the connection went first. */
  readonly requests: { id: string; answered: boolean; cut: boolean }[];
  /** Ids that had a second request arrive while one was still under way. */
  readonly overlapping: string[];
  underWay(): number;
}

async function startCountingReceiver(answerDelayMs: number): Promise<CountingReceiver> {
  const inFlight = new Map<string, number>();
  const requests: CountingReceiver['requests'] = [];
  const overlapping: string[] = [];
  let underWay = 0;
  const server = await startLocalServer((req, res) => {
    const id = String(req.headers['webhook-id']);
    const record = { id, answered: false, cut: false };
    requests.push(record);
    const count = (inFlight.get(id) ?? 0) + 1;
    inFlight.set(id, count);
    if (count > 1) overlapping.push(id);
    underWay += 1;
    // A sender that dies closes its side of the connection: the request is over then, though Node's server
    // may still let an answer be written into the half-closed socket.
    let over = false;
    const end = () => {
      if (over) return;
      over = true;
      req.socket.off('end', end);
      req.socket.off('close', end);
      inFlight.set(id, inFlight.get(id)! - 1);
      underWay -= 1;
      if (!record.answered) record.cut = true;
    };
    req.socket.once('end', end);
    req.socket.once('close', end);
    res.once('close', end);
    req.resume();
    req.once('end', () => {
      setTimeout(() => {
        if (over || res.destroyed) return;
        record.answered = true;
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }, answerDelayMs).unref();
    });
  });
  return { url: `http://127.0.0.1:${server.port}/hooks`, server, requests, overlapping, underWay: () => underWay };
}

const redisSkip = await redisSkipReason();

// Counters of this run only: ioredis reads options from the URL's query, and keyPrefix names every key.
const redisPrefix = `callgate_test_${randomBytes(6).toString('hex')}:`;
const redisUrl = `redis://${redisHost}:${redisPort}/0?keyPrefix=${redisPrefix}`;
let redis: Redis;
let database: TestDatabase;
let db: Db;
let fake: FakeElevenLabs;
let seed: SeededAccount;
let apis: ServerProcess[] = [];
let workers: ServerProcess[] = [];
const started: ServerProcess[] = [];

/** Each worker serves /metrics and /readyz on a port of its own (it has no API port), as the guide says. */
const metricsUrl = new Map<ServerProcess, string>();
const workerEnv = (metricsPort: number): Record<string, string> => ({
  ...database.env,
  CALLGATE_METRICS_PORT: String(metricsPort),
  CALLGATE_ROLES: 'worker',
  CALLGATE_MIGRATE_ON_START: 'false',
  CALLGATE_LOG_LEVEL: 'info',
  CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
  CALLGATE_WEBHOOK_CONCURRENCY: '8',
  // One endpoint takes every attempt here: with the default cap of 4 in flight to it, the second worker would
  // have nothing to send (the cap itself is tested in test/webhooks/webhooks.fairness*.test.ts).
  CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY: '100',
  // A claim's lease is this timeout plus 30 s: what a killed worker's deliveries wait before another takes them.
  CALLGATE_WEBHOOK_TIMEOUT_MS: '1500',
  CALLGATE_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms,100ms',
});
const startWorker = async () => {
  const port = await freePort();
  const server = await startServerProcess({ env: workerEnv(port) });
  metricsUrl.set(server, `http://127.0.0.1:${port}`);
  started.push(server);
  return server;
};
/** A new live key of the seed account, so that each check has its own per-key count. */
const newKey = async (name: string) => {
  const key = await createApiKey(db, systemClock, { accountId: seed.accountId, name, mode: 'live' });
  return { id: key.id, token: key.token };
};
const getCalls = async (server: ServerProcess, token: string) => {
  const res = await fetch(`${server.url}/v1/calls?limit=1`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as Record<string, any>;
  return { status: res.status, body };
};

/** Redis, the database (migrated and seeded here), a fake ElevenLabs, then 3 API processes and 2 workers. */
function withScaleProcesses(dialect: Dialect): void {
  before(async () => {
    redis = new Redis({ host: redisHost, port: redisPort, lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect();
    database = await createTestDatabase(dialect, { migrated: true });
    fake = await startFakeElevenLabs({ apiKey: elevenLabsKey });
    // The test process migrates and seeds; the servers start with CALLGATE_MIGRATE_ON_START=false, as in the
    // deployment guide's rolling setup (they would refuse a database behind their code).
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      seed = await seedAccount(services);
      await upsertAgent(services.db, services.clock, {
        accountId: seed.accountId,
        agentId: 'agent_el_scale',
        name: 'ElevenLabs agent',
        provider: 'elevenlabs',
        phoneNumberId: 'phnum_twilio_1',
        phoneNumberProvider: 'twilio',
      });
    } finally {
      await services.close();
    }
    db = openDatabase(database.config).db;

    const apiEnv = {
      ...database.env,
      ...elevenLabsEnv(fake, { CALLGATE_PROVIDER_TIMEOUT_MS: '5000' }),
      CALLGATE_ROLES: 'api',
      CALLGATE_MIGRATE_ON_START: 'false',
      REDIS_URL: redisUrl,
      CALLGATE_RATE_LIMIT_PER_MINUTE: String(limitPerMinute),
    };
    const startApi = async () => {
      const server = await startServerProcess({ env: apiEnv });
      started.push(server);
      return server;
    };
    const all = await Promise.all([startApi(), startApi(), startApi(), startWorker(), startWorker()]);
    apis = all.slice(0, 3);
    workers = all.slice(3);
  });

  after(async () => {
    await Promise.all(started.map((server) => server.kill()));
    if (redis) {
      const keys = await redis.keys(`${redisPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await fake?.close();
    await db?.destroy();
    await database?.drop();
  });
}

await forEachDialect('Scale: 3 API processes and 2 workers on one PostgreSQL, limits in Redis', (dialect) => {
  if (dialect !== 'postgres') {
    it('runs on PostgreSQL', { skip: 'several processes share a PostgreSQL database only' });
    return;
  }
  if (redisSkip) {
    it('runs with Redis', { skip: redisSkip });
    return;
  }

  withScaleProcesses(dialect);

  it('the per-key limit is exact across the three API processes: of 60 requests at once, 25 succeed', async () => {
    const key = await newKey('rate limit');
    const sent = 60;
    const answers = await concurrently(sent, (i) =>
      postCall(apis[i % 3]!.url, key.token, { agent_id: seed.agentId, to: `+1415555${String(3000 + i)}` }),
    );
    const created = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.status === 429);
    assert.equal(created.length, limitPerMinute, answers.map((answer) => answer.status).join());
    assert.equal(refused.length, sent - limitPerMinute);
    for (const answer of refused) {
      assert.equal(answer.body.error, 'rate_limit_exceeded');
      assert.ok(Number(answer.headers.get('retry-after')) >= 1);
    }
    const calls = await db.selectFrom('calls').select('id').where('api_key_id', '=', key.id).execute();
    assert.equal(calls.length, limitPerMinute);
    // The count lives in Redis under this run's prefix (every request counted), and not in PostgreSQL.
    assert.equal(await redis.get(`${redisPrefix}cg_key:key:${key.id}`), String(sent));
    const table = await sql<{ name: string | null }>`select to_regclass('rate_limits')::text as name`.execute(db);
    if (table.rows[0]!.name !== null) {
      const inPostgres = await sql<{ n: string }>`select count(*) as n from rate_limits`.execute(db);
      assert.equal(Number(inPostgres.rows[0]!.n), 0);
    }
  });

  it('20 requests at once with one Idempotency-Key, over three processes, give one call at the provider (three rounds)', async () => {
    const body = { agent_id: 'agent_el_scale', to: '+14155550188', metadata: { round: 'scale' } };
    const rounds = 3;
    for (let round = 0; round < rounds; round++) {
      const key = await newKey(`idempotency ${round}`);
      const idempotencyKey = `scale-${round}-${randomBytes(4).toString('hex')}`;
      const outboundBefore = fake.requestsTo('outbound').length;
      // The provider takes 400 ms to answer: the other 19 arrive while the first is still placing its call.
      fake.queue('outbound', {
        status: 200,
        body: { success: true, message: 'Success', conversation_id: `conv_scale_${round}`, callSid: `CA${'0'.repeat(31)}${round}` },
        delayMs: 400,
      });
      const answers: HttpAnswer[] = await concurrently(20, (i) => postCall(apis[i % 3]!.url, key.token, body, idempotencyKey));
      const created = answers.filter((answer) => answer.status === 201);
      const firsts = created.filter((answer) => answer.headers.get('idempotent-replayed') !== 'true');
      assert.equal(firsts.length, 1, `one request placed the call: ${answers.map((a) => a.status).join()}`);
      const callId = firsts[0]!.body.id as string;
      for (const answer of answers) {
        if (answer.status === 201) {
          assert.deepEqual(answer.body, firsts[0]!.body);
        } else {
          // A duplicate that waited longer than CALLGATE_IDEMPOTENCY_WAIT_MS: 409, the first is still under way.
          assert.equal(answer.status, 409, JSON.stringify(answer.body));
          assert.equal(answer.body.error, 'idempotency_conflict');
        }
      }
      assert.equal(fake.requestsTo('outbound').length - outboundBefore, 1, 'one outbound call at the provider');
      const rows = await db.selectFrom('calls').select(['id', 'provider_conversation_id']).where('api_key_id', '=', key.id).execute();
      assert.deepEqual(rows, [{ id: callId, provider_conversation_id: `conv_scale_${round}` }]);
    }
    // The processes' own counts agree: 3 requests owned their key, the 57 others replayed or waited.
    const samples = (
      await Promise.all(apis.map(async (api) => parsePrometheusText(await (await fetch(`${api.url}/metrics`)).text())))
    ).flat();
    const total = (result: string) =>
      samples
        .filter((s) => s.name === 'callgate_idempotency_requests_total' && s.labels.result === result)
        .reduce((sum, s) => sum + s.value, 0);
    assert.equal(total('owned'), rounds);
    assert.equal(total('replay') + total('conflict') + total('in_progress'), 19 * rounds);
  });

  it('a key revoked by the CLI is refused by every API process on its next request', async () => {
    const key = await newKey('revoked');
    // Each process has just accepted the key (anything cached would be warm now).
    for (const api of apis) assert.equal((await getCalls(api, key.token)).status, 200);

    const revoke = await spawnCli('source', cliEnv({ ...database.env, CALLGATE_MIGRATE_ON_START: 'false' }), [
      'keys',
      'revoke',
      key.id,
      '--json',
    ]);
    assert.equal(revoke.code, 0, revoke.stderr);
    assert.equal(JSON.parse(revoke.stdout).id, key.id);

    for (const api of apis) {
      const read = await getCalls(api, key.token);
      assert.equal(read.status, 401, JSON.stringify(read.body));
      assert.equal(read.body.error, 'unauthorized');
      const create = await postCall(api.url, key.token, { agent_id: seed.agentId, to: '+14155550199' });
      assert.equal(create.status, 401);
    }
    const calls = await db.selectFrom('calls').select('id').where('api_key_id', '=', key.id).execute();
    assert.deepEqual(calls, []);
  });

  it('a worker killed with kill -9 mid-delivery loses no event, and no delivery has two attempts under way at once', async () => {
    // Each answer takes a second (inside the 1.5 s timeout): the victim's attempts are still open when it is
    // killed just after both workers were seen sending, however slowly a loaded machine runs the test.
    const receiver = await startCountingReceiver(1_000);
    try {
      await createEndpoint(db, systemClock, true, { accountId: seed.accountId, url: receiver.url });
      const key = await newKey('webhooks');
      // Calls whose outcomes the workers record (and write call.completed events for) around the kill, and
      // events written at once, committed together, then one NOTIFY wakes both workers.
      const placing = concurrently(12, (i) =>
        postCall(apis[i % 3]!.url, key.token, { agent_id: seed.agentId, to: `+1415555${String(4000 + i)}` }),
      );
      await enqueueEvents(
        db,
        systemClock,
        Array.from({ length: 150 }, (_, n) => ({
          accountId: seed.accountId,
          mode: 'live',
          type: 'call.completed',
          callId: null,
          data: { n },
        })),
      );
      await sql`notify callgate_deliveries`.execute(db);

      // More requests under way than one worker may have (8): both workers are sending. Kill one of them.
      await until('both workers to be sending', () => (receiver.underWay() > 8 ? true : undefined), 20_000);
      const [victim, survivor] = workers as [ServerProcess, ServerProcess];
      assert.equal((await victim.kill()).signal, 'SIGKILL');
      const calls = await placing;
      for (const answer of calls) assert.equal(answer.status, 201, JSON.stringify(answer.body));
      const restarted = await startWorker();

      // The dead worker's claims come back when their lease ends (the timeout plus 30 s); then all is sent.
      let statuses = '';
      await until(
        'every delivery to succeed',
        async () => {
          assert.deepEqual(receiver.overlapping, [], 'a webhook-id was sent again while its previous request was under way');
          const rows = await db
            .selectFrom('webhook_deliveries')
            .select((eb) => ['status', eb.fn.countAll<string>().as('n')])
            .groupBy('status')
            .execute();
          statuses = rows.map((row) => `${row.n} ${row.status}`).join(', ');
          const ended = await db
            .selectFrom('calls')
            .select('id')
            .where('api_key_id', '=', key.id)
            .where('status', '=', 'completed')
            .execute();
          const done = rows.length === 1 && rows[0]!.status === 'succeeded' && Number(rows[0]!.n) === 150 + calls.length;
          return done && ended.length === calls.length ? true : undefined;
        },
        60_000,
      ).catch((error: Error) => {
        assert.fail(`${error.message} (deliveries: ${statuses})\n${[survivor, restarted].map((p) => p.output()).join('\n')}`);
      });

      // The kill cut attempts short: the receiver saw connections close before their answer.
      const cut = new Set(receiver.requests.filter((request) => request.cut).map((request) => request.id));
      assert.ok(cut.size > 0, 'the worker was killed with attempts under way');
      // Every event, the calls' included, reached the receiver with a 200; the cut ones were sent again.
      // The events written since the endpoint was added (the calls of the tests above ended before it: their
      // events have no delivery).
      const events = await db
        .selectFrom('webhook_events')
        .innerJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'webhook_events.id')
        .select(['webhook_events.id', 'webhook_events.call_id'])
        .execute();
      assert.equal(events.length, 150 + calls.length);
      assert.deepEqual(
        events.flatMap((event) => (event.call_id ? [event.call_id] : [])).sort(),
        calls.map((answer) => answer.body.id as string).sort(),
      );
      const answered = new Set(receiver.requests.filter((request) => request.answered).map((request) => request.id));
      assert.deepEqual([...answered].sort(), events.map((event) => event.id).sort());
      assert.deepEqual(receiver.overlapping, []);

      // The attempts each delivery recorded never overlap in time either.
      const attempts = await db
        .selectFrom('webhook_attempts')
        .select(['delivery_id', 'attempted_at', 'duration_ms'])
        .orderBy('attempted_at')
        .execute();
      const byDelivery = new Map<string, typeof attempts>();
      for (const attempt of attempts) byDelivery.set(attempt.delivery_id, [...(byDelivery.get(attempt.delivery_id) ?? []), attempt]);
      for (const [deliveryId, own] of byDelivery) {
        for (let i = 1; i < own.length; i++) {
          const previousEnd = Date.parse(own[i - 1]!.attempted_at) + own[i - 1]!.duration_ms;
          assert.ok(previousEnd <= Date.parse(own[i]!.attempted_at), `attempts of ${deliveryId} overlap`);
        }
      }
      for (const server of [survivor, restarted]) {
        assert.doesNotMatch(server.output(), /"level":50/);
        // Probed and scraped on its metrics port: ready, and no webhook backlog left.
        const ready = await fetch(`${metricsUrl.get(server)}/readyz`);
        assert.equal(ready.status, 200, await ready.text());
        const samples = parsePrometheusText(await (await fetch(`${metricsUrl.get(server)}/metrics`)).text());
        assert.equal(sampleValue(samples, 'callgate_webhook_deliveries_pending'), 0);
        assert.equal(sampleValue(samples, 'callgate_webhook_oldest_due_age_seconds'), 0);
      }
      const exits = await Promise.all([...apis, survivor, restarted].map((server) => server.stop()));
      assert.deepEqual(exits, Array(5).fill({ code: 0, signal: null }));
    } finally {
      await receiver.server.stop();
    }
  });
});
