/**
 * On PostgreSQL (without Redis) the limits are counted by rate-limiter-flexible's RateLimiterPostgres in
 * `rate_limits`, which every process of a deployment shares: the answers at and past the limit, what is
 * counted where, long counter names, and an unreachable store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type ServiceOverrides } from '../../src/container.js';
import { revokeApiKey } from '../../src/features/api-keys/api-keys.service.js';
import type { RateLimiter } from '../../src/features/rate-limit/rate-limit.interface.js';
import { createRateLimiter, storedKey } from '../../src/features/rate-limit/rate-limit.store.js';
import { endPool, postgresUnavailableReason } from '../support/test-database.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { startTestApp, testEnvDefaults, type SeededAccount, type TestApp } from '../support/test-app.js';

const requirePostgres = process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1';
const unavailable = await postgresUnavailableReason();
if (unavailable && requirePostgres) throw new Error(`CALLGATE_TEST_REQUIRE_POSTGRES=1 but ${unavailable}`);

const limitEnv = { CALLGATE_RATE_LIMIT_PER_MINUTE: '10', CALLGATE_IP_RATE_LIMIT_PER_MINUTE: '5' };

/** What a client sees of the limit in an answer. */
function seen(res: LightMyRequestResponse) {
  const match = /^"per-key";r=(\d+);t=(\d+)$/.exec(String(res.headers.ratelimit));
  return {
    status: res.statusCode,
    policy: res.headers['ratelimit-policy'],
    remaining: match ? Number(match[1]) : null,
    resetSeconds: match ? Number(match[2]) : null,
    retryAfter: res.headers['retry-after'] === undefined ? null : Number(res.headers['retry-after']),
    error: res.statusCode === 429 ? res.json().error : null,
  };
}

await describe('Rate limits counted in PostgreSQL [postgres]', { skip: unavailable ?? false }, () => {
  let t: TestApp;
  let pool: pg.Pool;
  before(async () => {
    t = await startTestApp('postgres', { env: limitEnv });
    pool = new pg.Pool({ connectionString: t.database.env.DATABASE_URL, max: 2 });
  });
  after(async () => {
    // Its connections closed before the test app drops the database (WITH (FORCE)), see endPool.
    if (pool) await endPool(pool);
    await t?.close();
  });

  /** Another app on the same database, as a second process would be. */
  const secondApp = async (overrides: ServiceOverrides) => {
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...t.database.env, ...limitEnv }), overrides);
    const app = buildApp(services);
    await app.ready();
    return {
      app,
      async close() {
        await app.close();
        await services.close();
      },
    };
  };

  const post = (app: { inject: TestApp['inject'] }, key: SeededAccount) =>
    app.inject({
      method: 'POST',
      url: '/v1/calls',
      headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ agent_id: key.agentId, to: '+14155550123' }),
    });

  const counter = async (name: string) =>
    (await pool.query<{ points: number; expire: string }>('select points, expire from rate_limits where key = $1', [name])).rows[0];

  it('answers 429 past the limit, with the RateLimit fields and Retry-After, on every process alike', async () => {
    const second = await secondApp({});
    try {
      const key = await t.newAccount({ agentId: 'agent_limited' });
      const answers: ReturnType<typeof seen>[] = [];
      // Alternating between the two processes: they share the counter.
      for (let i = 0; i < 12; i++) answers.push(seen(await post(i % 2 === 0 ? t : second.app, key)));
      assert.deepEqual(
        answers.map((s) => s.status),
        [...Array(10).fill(201), 429, 429],
      );
      answers.forEach((s, i) => {
        assert.equal(s.policy, '"per-key";q=10;w=60');
        assert.equal(s.remaining, Math.max(0, 9 - i));
        if (s.status === 429) {
          assert.equal(s.error, 'rate_limit_exceeded');
          assert.ok(s.retryAfter! >= 1 && s.retryAfter! <= 60 && s.retryAfter === s.resetSeconds);
        }
      });
      // A count past the limit is still counted, as the library counts it.
      assert.equal((await counter(`cg_key:key:${key.keyId}`))?.points, 12);
    } finally {
      await second.close();
    }
  });

  it('does not count a revoked key (its requests are counted per client IP, as an unknown key)', async () => {
    const key = await t.newAccount({ agentId: 'agent_revoked' });
    assert.equal((await post(t, key)).statusCode, 201);
    assert.equal((await counter(`cg_key:key:${key.keyId}`))?.points, 1);
    await revokeApiKey(t.services.db, t.services.clock, key.keyId);
    const res = await t.inject({
      method: 'POST',
      url: '/v1/calls',
      remoteAddress: '198.51.100.7',
      headers: { authorization: `Bearer ${key.token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ agent_id: key.agentId, to: '+14155550123' }),
    });
    assert.equal(res.statusCode, 401);
    assert.equal((await counter(`cg_key:key:${key.keyId}`))?.points, 1);
    assert.equal((await counter('cg_ip:ip:198.51.100.7'))?.points, 1);
  });

  it('counts a name too long for the table under its hash (storedKey)', async () => {
    const limiter = await createRateLimiter({ store: { kind: 'postgres', pool }, name: 'cg_long', pointsPerWindow: 3, windowSeconds: 60 });
    const long = `key:${'x'.repeat(300)}`;
    for (const name of ['key:short', long]) {
      assert.equal((await limiter.consume(name)).remaining, 2);
      await limiter.consume(name);
      assert.equal((await limiter.consume(name)).remaining, 0);
      assert.equal((await limiter.consume(name)).allowed, false);
      assert.equal((await counter(`cg_long:${storedKey(name)}`))?.points, 4);
    }
    assert.notEqual(storedKey(long), long);
  });

  it('answers 503 database_unavailable while the counter cannot reach the database, and 201 once it can', async () => {
    const proxy = await startTcpProxy();
    const proxied = new pg.Pool({
      connectionString: proxy.urlThrough(t.database.env.DATABASE_URL!),
      max: 2,
      connectionTimeoutMillis: 2_000,
    });
    proxied.on('connect', (client) => client.on('error', () => undefined));
    proxied.on('error', () => undefined);
    let second: Awaited<ReturnType<typeof secondApp>> | undefined;
    try {
      const perKeyLimiter: RateLimiter = await createRateLimiter({
        store: { kind: 'postgres', pool: proxied },
        name: 'cg_key',
        pointsPerWindow: 10,
        windowSeconds: 60,
      });
      second = await secondApp({ perKeyLimiter });
      const key = await t.newAccount({ agentId: 'agent_outage' });
      assert.equal((await post(second.app, key)).statusCode, 201);

      proxy.pause();
      proxy.dropAll();
      const away = await post(second.app, key);
      assert.equal(away.statusCode, 503, away.body);
      assert.equal(away.json().error, 'database_unavailable');
      assert.match(away.json().request_id, /^req_/);

      proxy.resume();
      const back = await post(second.app, key);
      assert.equal(back.statusCode, 201, back.body);
      assert.equal(seen(back).remaining, 8);
    } finally {
      await second?.close();
      await endPool(proxied);
      await proxy.close();
    }
  });
});
