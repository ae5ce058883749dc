import assert from 'node:assert/strict';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import type { RateLimiter } from '../../src/features/rate-limit/rate-limit.interface.js';
import { createRateLimiter } from '../../src/features/rate-limit/rate-limit.store.js';
import { forEachDialect } from '../support/dialects.js';
import { redisSkipReason } from '../support/redis.js';
import { endPool } from '../support/test-database.js';
import { callBody, startTestApp, testEnvDefaults, type TestApp } from '../support/test-app.js';

const limitEnv = { CALLGATE_RATE_LIMIT_PER_MINUTE: '10', CALLGATE_IP_RATE_LIMIT_PER_MINUTE: '5' };

function parseRateLimit(header: unknown): { r: number; t: number } {
  const match = /^"per-key";r=(\d+);t=(\d+)$/.exec(String(header));
  assert.ok(match, `RateLimit header ${String(header)}`);
  return { r: Number(match[1]), t: Number(match[2]) };
}

await forEachDialect('Per-key rate limit (spec 8)', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: limitEnv });
  });
  after(async () => t.close());

  it('allows 10 requests a minute, counting errors and replays, and answers the 11th with 429', async () => {
    const key = await t.newAccount({ agentId: 'agent_rate' });
    const send = (body: unknown, idempotencyKey?: string) =>
      t.createCall(body, { token: key.token, ...(idempotencyKey ? { idempotencyKey } : {}) });
    const responses = [
      await send({ agent_id: key.agentId, to: '+14155550123' }, 'rl-1'),
      await send({ agent_id: key.agentId, to: '+14155550123' }, 'rl-1'), // replay
      await send({ agent_id: 'agent_nope', to: '+14155550123' }), // 403
      await send({ agent_id: key.agentId, to: 'bad' }), // 400
      await send('{not json'),
    ];
    for (let i = responses.length; i < 10; i++) responses.push(await send({ agent_id: key.agentId, to: '+14155550123' }));
    assert.deepEqual(
      responses.map((r) => r.statusCode),
      [201, 201, 403, 400, 400, 201, 201, 201, 201, 201],
    );
    responses.forEach((res, i) => {
      assert.equal(res.headers['ratelimit-policy'], '"per-key";q=10;w=60');
      const { r, t: reset } = parseRateLimit(res.headers.ratelimit);
      assert.equal(r, 9 - i);
      assert.ok(reset >= 0 && reset <= 60);
    });

    const limited = await send({ agent_id: key.agentId, to: '+14155550123' }, 'rl-new');
    assert.equal(limited.statusCode, 429);
    assert.equal(limited.json().error, 'rate_limit_exceeded');
    assert.match(limited.json().request_id, /^req_/);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(parseRateLimit(limited.headers.ratelimit).r, 0);
    assert.equal(limited.headers['ratelimit-policy'], '"per-key";q=10;w=60');

    // A 429 did not hold the idempotency key: it works once the window has passed.
    const row = await t.services.db.selectFrom('idempotency_keys').selectAll().where('idempotency_key', '=', 'rl-new').executeTakeFirst();
    assert.equal(row, undefined);
  });

  it('counts each API key on its own', async () => {
    const a = await t.newAccount({ agentId: 'agent_a' });
    const b = await t.newAccount({ agentId: 'agent_b' });
    for (let i = 0; i < 10; i++) await t.createCall({ agent_id: a.agentId, to: '+14155550123' }, { token: a.token });
    assert.equal((await t.createCall({ agent_id: a.agentId, to: '+14155550123' }, { token: a.token })).statusCode, 429);
    assert.equal((await t.createCall({ agent_id: b.agentId, to: '+14155550123' }, { token: b.token })).statusCode, 201);
  });

  it('limits requests without a valid key per client IP', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const res = await t.inject({
        method: 'POST',
        url: '/v1/calls',
        remoteAddress: '203.0.113.9',
        headers: { authorization: `Bearer cg_live_${String(i).padStart(64, '0')}`, 'content-type': 'application/json' },
        payload: '{}',
      });
      statuses.push(res.statusCode);
      if (res.statusCode === 429) assert.ok(Number(res.headers['retry-after']) >= 1);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    // Another address is not affected, and neither is a valid key from the limited address.
    const otherIp = await t.inject({ method: 'POST', url: '/v1/calls', remoteAddress: '203.0.113.10', payload: '{}' });
    assert.equal(otherIp.statusCode, 401);
    const valid = await t.inject({
      method: 'POST',
      url: '/v1/calls',
      remoteAddress: '203.0.113.9',
      headers: { authorization: `Bearer ${t.seed.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify(callBody(t)),
    });
    assert.equal(valid.statusCode, 201);
  });

  it('counts a client address of any length (a long X-Forwarded-For) without a 500, each on its own', async () => {
    const proxied = await startTestApp(dialect, { env: { ...limitEnv, CALLGATE_TRUST_PROXY: 'true' } });
    try {
      // Two addresses that share their first 300 characters are still two counters.
      const long = (last: string) => `${'a'.repeat(300)}${last}`;
      const send = (forwardedFor: string) =>
        proxied.inject({ method: 'GET', url: '/v1/calls', headers: { 'x-forwarded-for': forwardedFor, authorization: 'Bearer nope' } });
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await send(long('1'))).statusCode);
      assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429]);
      const other = await send(long('2'));
      assert.equal(other.statusCode, 401, other.body);
      assert.equal((await send('ffff:'.repeat(60))).statusCode, 401);
    } finally {
      await proxied.close();
    }
  });

  if (dialect === 'postgres') {
    it('processes starting together on a new database all get their limiter (the table is made once)', async () => {
      // What three processes do on a fresh database: each limiter runs CREATE TABLE IF NOT EXISTS at once.
      const pool = new pg.Pool({ connectionString: t.database.env.DATABASE_URL, max: 8 });
      try {
        for (let round = 0; round < 5; round++) {
          await pool.query('drop table if exists rate_limits');
          const made = await Promise.allSettled(
            Array.from({ length: 6 }, () =>
              createRateLimiter({ store: { kind: 'postgres', pool }, name: 'race', pointsPerWindow: 5, windowSeconds: 60 }),
            ),
          );
          assert.deepEqual(
            made.filter((result) => result.status === 'rejected').map((result) => String((result as PromiseRejectedResult).reason)),
            [],
          );
          assert.equal((await (made[0] as PromiseFulfilledResult<RateLimiter>).value.consume('k')).allowed, true);
        }
      } finally {
        await endPool(pool);
      }
    });

    it('two processes sharing one PostgreSQL database share one count', async () => {
      const config = loadConfig({ ...testEnvDefaults, ...t.database.env, ...limitEnv });
      const second = await createServices(config);
      const app2 = buildApp(second);
      await app2.ready();
      try {
        const key = await t.newAccount({ agentId: 'agent_shared' });
        const statuses: number[] = [];
        for (let i = 0; i < 12; i++) {
          const app = i % 2 === 0 ? t.app : app2;
          const res = await app.inject({
            method: 'POST',
            url: '/v1/calls',
            headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
            payload: JSON.stringify({ agent_id: key.agentId, to: '+14155550123' }),
          });
          statuses.push(res.statusCode);
        }
        assert.deepEqual(statuses, [...Array(10).fill(201), 429, 429]);
      } finally {
        await app2.close();
        await second.close();
      }
    });
  }
});

const redisSkip = await redisSkipReason();
describe('Per-key rate limit kept in Redis (REDIS_URL)', { skip: redisSkip }, () => {
  let t: TestApp;
  before(async () => {
    // A fresh Redis key prefix per run: the counters are named after the API key id, which is new each run.
    t = await startTestApp('sqlite', { env: { ...limitEnv, REDIS_URL: 'redis://127.0.0.1:6379' } });
  });
  after(async () => t.close());

  it('answers the 11th request with 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await t.createCall(callBody(t))).statusCode);
    assert.deepEqual(statuses, [...Array(10).fill(201), 429]);
  });
});
