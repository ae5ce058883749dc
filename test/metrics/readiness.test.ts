/**
 * GET /readyz through the real app on both databases: ready with a live worker; 503 naming the reason when
 * a worker job stops beating (an injected clock moves past its bound), when migrations are pending (a newer
 * version's migrations only add a note), and, on PostgreSQL, when the database goes away (a TCP proxy refuses it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { seedAccount, startTestApp, testEnvDefaults, type TestApp } from '../support/test-app.js';
import { createTestDatabase, postgresUnavailableReason } from '../support/test-database.js';
import { eventually } from '../support/wait.js';

async function readyz(t: { inject: TestApp['inject'] }): Promise<{ status: number; body: any }> {
  const res = await t.inject({ method: 'GET', url: '/readyz' });
  return { status: res.statusCode, body: res.json() };
}

await forEachDialect('GET /readyz', (dialect) => {
  describe('a worker whose job stops beating', () => {
    let t: TestApp;
    const clock = new ManualClock();
    before(async () => {
      t = await startTestApp(dialect, {
        startWorker: true,
        overrides: { clock },
        // A job whose every pass fails, as one would whose table is locked or whose code is broken.
        register: (_app, services) =>
          void services.jobs.add({
            name: 'stuck-job',
            label: 'stuck job pass',
            intervalMs: 1_000,
            runOnce: async () => {
              throw new Error('this job cannot pass');
            },
          }),
      });
    });
    after(() => t.close());

    it('is ready while every job beats, with its checks', async () => {
      const { status, body } = await readyz(t);
      assert.equal(status, 200, JSON.stringify(body));
      assert.deepEqual(body, {
        status: 'ready',
        checks: { database: { status: 'ok' }, migrations: { status: 'ok' }, worker: { status: 'ok' } },
      });
    });

    it('is not ready once a job has not ended a pass well for longer than its bound, and says which', async () => {
      clock.advance(10 * 60_000);
      const { status, body } = await readyz(t);
      assert.equal(status, 503, JSON.stringify(body));
      assert.equal(body.status, 'not_ready');
      assert.equal(body.checks.worker.status, 'failing');
      assert.match(body.checks.worker.reason, /stuck-job \(no pass ended well for 600 s; every 1 s expected\)/);
      assert.match(body.reason, /Worker jobs not beating/);
      assert.equal(body.checks.database.status, 'ok');
      // The healthy jobs pass again on their next interval (at the clock's new time); the stuck one never does.
      await eventually('only the stuck job failing', async () => {
        const again = await readyz(t);
        return again.status === 503 && !/call-monitor|webhook-dispatcher/.test(again.body.checks.worker.reason) ? again : undefined;
      });
      const lag = await t.inject({ method: 'GET', url: '/metrics' });
      assert.match(lag.body, /callgate_job_seconds_since_last_pass\{job="stuck-job"\} 600/);
    });
  });

  describe('migrations', () => {
    let t: TestApp;
    before(async () => {
      t = await startTestApp(dialect, { env: { CALLGATE_ROLES: 'api' } });
    });
    after(() => t.close());

    it('is ready in an api-only process without a worker, whose check says it was skipped', async () => {
      const { status, body } = await readyz(t);
      assert.equal(status, 200, JSON.stringify(body));
      assert.equal(body.status, 'ready');
      assert.deepEqual(body.checks.database, { status: 'ok' });
      assert.deepEqual(body.checks.migrations, { status: 'ok' });
      assert.equal(body.checks.worker.status, 'skipped');
      assert.match(body.checks.worker.note, /no worker runs in this process/i);
    });

    it('is not ready with a migration pending, naming it', async () => {
      await t.services.db
        .deleteFrom('kysely_migration' as never)
        .where('name' as never, '=', '0009-batches' as never)
        .execute();
      const { status, body } = await readyz(t);
      assert.equal(status, 503);
      assert.equal(body.checks.migrations.status, 'failing');
      assert.match(body.checks.migrations.reason, /Migrations not applied yet: 0009-batches/);
      await t.services.db
        .insertInto('kysely_migration' as never)
        .values({ name: '0009-batches', timestamp: new Date().toISOString() } as never)
        .execute();
      assert.equal((await readyz(t)).status, 200);
    });

    // A rolling deploy runs `callgate migrate` from the new release while the old processes still serve:
    // they stay in the load balancer (a 503 from every one of them would be an outage) and say why in a note.
    it('stays ready, with a note, when a newer version migrated the database while it ran', async () => {
      await t.services.db
        .insertInto('kysely_migration' as never)
        .values({ name: '9999-from-the-future', timestamp: new Date().toISOString() } as never)
        .execute();
      const { status, body } = await readyz(t);
      assert.equal(status, 200);
      assert.equal(body.status, 'ready');
      assert.equal(body.checks.migrations.status, 'ok');
      assert.match(body.checks.migrations.note, /9999-from-the-future.*newer callgate/);
      await t.services.db
        .deleteFrom('kysely_migration' as never)
        .where('name' as never, '=', '9999-from-the-future' as never)
        .execute();
    });
  });
});

const unavailable = await postgresUnavailableReason();
if (unavailable && process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1')
  throw new Error(`CALLGATE_TEST_REQUIRE_POSTGRES=1 but ${unavailable}`);

await describe('GET /readyz with the PostgreSQL database gone', { skip: unavailable ?? false }, () => {
  it('answers 503 naming the database while it is away, and 200 once it is back', async () => {
    const database = await createTestDatabase('postgres');
    const proxy = await startTcpProxy();
    const services = await createServices(
      loadConfig({
        ...testEnvDefaults,
        ...database.env,
        DATABASE_URL: proxy.urlThrough(database.env.DATABASE_URL!),
        CALLGATE_ROLES: 'api',
      }),
    );
    const app = buildApp(services);
    try {
      assert.equal((await readyz(app)).status, 200);
      proxy.pause();
      proxy.dropAll();
      const down = await readyz(app);
      assert.equal(down.status, 503, JSON.stringify(down.body));
      assert.equal(down.body.checks.database.status, 'failing');
      assert.match(down.body.checks.database.reason, /^The database is unreachable: /);
      assert.equal(down.body.checks.migrations.status, 'failing');
      // Liveness is another question: /healthz fails too here, but it stays the process's own probe.
      proxy.resume();
      await eventually('ready again', async () => ((await readyz(app)).status === 200 ? true : undefined));
    } finally {
      await app.close();
      await services.close();
      await proxy.close();
      await database.drop();
    }
  });
});

await describe('A PostgreSQL database dropped under a running process', { skip: unavailable ?? false }, () => {
  // Dropping it ends every connection; new ones are refused with 3D000 (invalid_catalog_name), as when an
  // operator drops or renames the database, or DATABASE_URL names one that is gone.
  it('answers /healthz and the API 503 database_unavailable, never 500', async () => {
    const database = await createTestDatabase('postgres');
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env, CALLGATE_ROLES: 'api' }));
    const seed = await seedAccount(services);
    const app = buildApp(services);
    try {
      await database.drop();
      const health = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(health.statusCode, 503, health.body);
      assert.equal(health.json().error, 'database_unavailable');
      const list = await app.inject({ method: 'GET', url: '/v1/calls', headers: { authorization: `Bearer ${seed.token}` } });
      assert.equal(list.statusCode, 503, list.body);
      assert.equal(list.json().error, 'database_unavailable');
    } finally {
      await app.close();
      await services.close();
    }
  });

  it('answers /readyz 503 with its reasons as whole sentences', async () => {
    const database = await createTestDatabase('postgres');
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env, CALLGATE_ROLES: 'api' }));
    const app = buildApp(services);
    try {
      assert.equal((await readyz(app)).status, 200);
      await database.drop();
      const down = await readyz(app);
      assert.equal(down.status, 503, JSON.stringify(down.body));
      assert.match(down.body.checks.database.reason, /^The database is unreachable: .*does not exist\.$/);
      assert.match(down.body.reason, /does not exist\. Not checked: the database is unreachable\.$/);
    } finally {
      await app.close();
      await services.close();
    }
  });
});
