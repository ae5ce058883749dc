/**
 * On PostgreSQL (without Redis) the per-key limiter counts a request in the statement that reads its API key
 * (`countWith`). Its decisions must be those of rate-limiter-flexible's own count, and its rows those the
 * library writes: processes of two releases share `rate_limits` during a rolling deploy.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import pg from 'pg';
import { RateLimiterPostgres, type RateLimiterRes } from 'rate-limiter-flexible';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type ServiceOverrides } from '../../src/container.js';
import type { Db } from '../../src/db/database.js';
import { revokeApiKey } from '../../src/features/api-keys/api-keys.service.js';
import type { RateLimiter } from '../../src/features/rate-limit/rate-limit.interface.js';
import { createRateLimiter, storedKey } from '../../src/features/rate-limit/rate-limit.store.js';
import { postgresUnavailableReason } from '../support/test-database.js';
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

await describe('Per-key rate limit counted with the key read [postgres]', { skip: unavailable ?? false }, () => {
  let t: TestApp;
  let pool: pg.Pool;
  before(async () => {
    t = await startTestApp('postgres', { env: limitEnv });
    pool = new pg.Pool({ connectionString: t.database.env.DATABASE_URL, max: 2 });
  });
  after(async () => {
    await pool?.end();
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

  it('is the path taken here, and answers as the read-then-consume path does, 429 at the limit included', async () => {
    assert.equal(typeof t.services.perKeyLimiter.countWith, 'function');
    const limiter = await createRateLimiter({ store: { kind: 'postgres', pool }, name: 'cg_key', pointsPerWindow: 10, windowSeconds: 60 });
    const withoutCountWith: RateLimiter = { consume: limiter.consume, peek: limiter.peek, refund: limiter.refund };
    const twoStep = await secondApp({ perKeyLimiter: withoutCountWith });
    try {
      const folded = await t.newAccount({ agentId: 'agent_folded' });
      const separate = await t.newAccount({ agentId: 'agent_separate' });
      const foldedSeen: ReturnType<typeof seen>[] = [];
      const separateSeen: ReturnType<typeof seen>[] = [];
      for (let i = 0; i < 12; i++) {
        foldedSeen.push(seen(await post(t, folded)));
        separateSeen.push(seen(await post(twoStep.app, separate)));
      }
      assert.deepEqual(
        foldedSeen.map((s) => s.status),
        [...Array(10).fill(201), 429, 429],
      );
      // The seconds to the window's end are read a moment apart: equal within one.
      foldedSeen.forEach((s, i) => {
        const other = separateSeen[i]!;
        assert.deepEqual(
          { ...s, resetSeconds: 0, retryAfter: s.retryAfter === null ? null : 0 },
          {
            ...other,
            resetSeconds: 0,
            retryAfter: other.retryAfter === null ? null : 0,
          },
        );
        assert.ok(Math.abs(s.resetSeconds! - other.resetSeconds!) <= 1, `t=${s.resetSeconds} and ${other.resetSeconds}`);
        assert.equal(s.policy, '"per-key";q=10;w=60');
        assert.equal(s.remaining, Math.max(0, 9 - i));
        if (s.status === 429) {
          assert.equal(s.error, 'rate_limit_exceeded');
          assert.ok(s.retryAfter! >= 1 && s.retryAfter! <= 60 && s.retryAfter === s.resetSeconds);
        }
      });
      // A count past the limit is still counted, as the library counts it.
      assert.equal((await counter(`cg_key:key:${folded.keyId}`))?.points, 12);
      assert.equal((await counter(`cg_key:key:${separate.keyId}`))?.points, 12);
    } finally {
      await twoStep.close();
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

  it("continues a counter the library wrote within its window, resets it after, and the library continues the statement's", async () => {
    const library = await new Promise<RateLimiterPostgres>((resolve, reject) => {
      const made: RateLimiterPostgres = new RateLimiterPostgres(
        { storeClient: pool, storeType: 'pool', tableName: 'rate_limits', keyPrefix: 'cg_key', points: 10, duration: 60 },
        (error?: unknown) => (error ? reject(error as Error) : resolve(made)),
      );
    });
    const key = await t.newAccount({ agentId: 'agent_library' });
    const name = `key:${key.keyId}`;
    for (let i = 0; i < 4; i++) await library.consume(name);
    const written = await counter(`cg_key:${name}`);
    assert.equal(written?.points, 4);

    // Within the library's window: counted on, its window kept.
    const fifth = seen(await post(t, key));
    assert.equal(fifth.remaining, 5);
    assert.deepEqual(await counter(`cg_key:${name}`), { points: 5, expire: written!.expire });

    // Up to the limit by the library, past it by the statement: 429, with the library's window end.
    for (let i = 0; i < 5; i++) await library.consume(name);
    const sentAt = Date.now();
    const limited = seen(await post(t, key));
    const secondsLeft = (at: number) => Math.ceil((Number(written!.expire) - at) / 1000);
    assert.equal(limited.status, 429);
    assert.equal(limited.remaining, 0);
    assert.ok(
      limited.resetSeconds! <= secondsLeft(sentAt) && limited.resetSeconds! >= secondsLeft(Date.now()),
      `t=${limited.resetSeconds}`,
    );
    assert.equal((await counter(`cg_key:${name}`))?.points, 11);

    // The window ended (its end moved into the past, as time would): the statement starts a new one.
    await pool.query('update rate_limits set expire = $2 where key = $1', [`cg_key:${name}`, Date.now() - 1]);
    const before = Date.now();
    const fresh = seen(await post(t, key));
    assert.equal(fresh.status, 201);
    assert.equal(fresh.remaining, 9);
    const renewed = await counter(`cg_key:${name}`);
    assert.equal(renewed?.points, 1);
    assert.ok(Number(renewed!.expire) >= before + 60_000 && Number(renewed!.expire) <= Date.now() + 60_000, renewed!.expire);

    // And the library goes on from the statement's count.
    const next: RateLimiterRes = await library.consume(name);
    assert.equal(next.consumedPoints, 2);
    assert.equal(next.remainingPoints, 8);
  });

  it('counts a name too long for the table under its hash, as consume does (storedKey)', async () => {
    const limiter = await createRateLimiter({ store: { kind: 'postgres', pool }, name: 'cg_long', pointsPerWindow: 3, windowSeconds: 60 });
    const named = (db: Db, p: { counted: string }) => db.selectNoFrom(sql<string>`${p.counted}::text`.as('rate_limit_name'));
    const long = `key:${'x'.repeat(150)}`;
    for (const name of ['key:short', long]) {
      const first = await limiter.countWith!({ statement: named, params: { counted: name } });
      assert.equal(first.row?.rate_limit_name, name);
      assert.equal(first.decision?.remaining, 2);
      await limiter.consume(name);
      assert.equal((await limiter.countWith!({ statement: named, params: { counted: name } })).decision?.remaining, 0);
      const refused = await limiter.countWith!({ statement: named, params: { counted: name } });
      assert.equal(refused.decision?.allowed, false);
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
      assert.equal(typeof perKeyLimiter.countWith, 'function');
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
      await proxied.end();
      await proxy.close();
    }
  });
});
