/**
 * `callgate copy-data --to postgres://…`: a SQLite database holding every kind of row, made through the CLI
 * and the API of the real app (a worker ran for the calls that ended and the deliveries that succeeded, then
 * stopped, leaving a call in progress and a delivery pending), is copied into a new PostgreSQL database. Every
 * table's rows are equal on both sides (less the expired ones left out), and an app on the copy takes the same
 * keys and portal session, replays a stored answer and sends the pending delivery. Then the refusals.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/container.js';
import { copyPlan } from '../../src/db/copy-to-postgres.js';
import { type Db, openDatabase } from '../../src/db/database.js';
import { cliEnv, runCli, runFailing, runJson } from '../support/cli-runner.js';
import { portalClient, type PortalClient } from '../support/portal-client.js';
import { testEnvDefaults, type TestApp } from '../support/test-app.js';
import { createTestDatabase, postgresUnavailableReason, type TestDatabase } from '../support/test-database.js';
import { startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import { until } from '../support/wait.js';

const requirePostgres = process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1';
const unavailable = await postgresUnavailableReason();
if (unavailable && requirePostgres) throw new Error(unavailable);

const tables = Object.keys(copyPlan) as (keyof typeof copyPlan)[];
const callBody = { agent_id: 'agent_test_simulator', to: '+14155550123', metadata: { order: 'A-1' } };
const password = 'correct horse battery';

interface Running {
  readonly app: FastifyInstance;
  readonly services: Services;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/** The real app on a database, as a server process runs it (with its worker when asked). */
async function startApp(env: Record<string, string>, worker: boolean): Promise<Running> {
  const services = await createServices(loadConfig({ ...testEnvDefaults, ...env }));
  const app = buildApp(services);
  await app.ready();
  if (worker) services.startWorker();
  return {
    app,
    services,
    inject: (options) => app.inject(options),
    async close() {
      await app.close();
      await services.close();
    },
  };
}

const api = (app: Running, method: 'GET' | 'POST', url: string, token: string, body?: unknown, idempotencyKey?: string) =>
  app.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });

/** Every row of a table, each as JSON with its columns in order, sorted: equal on both sides when copied exactly. */
async function rowsOf(db: Db, table: string): Promise<string[]> {
  const rows = await (db as any).selectFrom(table).selectAll().execute();
  return rows.map((row: Record<string, unknown>) => JSON.stringify(Object.entries(row).sort(([a], [b]) => a.localeCompare(b)))).sort();
}

async function countsOf(db: Db): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) counts[table] = (await rowsOf(db, table)).length;
  return counts;
}

// A skipped describe is not counted in the summary's "skipped"; a skipped test in it is.
if (unavailable) describe('callgate copy-data', () => it('runs with PostgreSQL', { skip: unavailable }));
else
  describe('callgate copy-data', () => {
    let source: TestDatabase;
    let target: TestDatabase;
    let env: NodeJS.ProcessEnv;
    let receiver: WebhookReceiver;
    let pendingReceiver: WebhookReceiver;
    const made: Record<string, any> = {};

    before(async () => {
      source = await createTestDatabase('sqlite', { migrated: true });
      target = await createTestDatabase('postgres');
      receiver = await startWebhookReceiver();
      pendingReceiver = await startWebhookReceiver();
      env = cliEnv({ ...source.env, CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true' });

      // The operator's part, through the CLI: an account (with its simulator agent and a limit of concurrent calls), keys of both modes, a
      // portal user, another agent, a suppression, and an endpoint that receives the live events.
      const account = await runJson(env, ['accounts', 'create', '--name', 'Acme']);
      made.accountId = account.id;
      await runJson(env, ['accounts', 'update', account.id, '--max-concurrent-calls', '20']);
      made.live = (await runJson(env, ['keys', 'create', '--account', account.id, '--name', 'CRM', '--mode', 'live'])).token;
      made.test = (await runJson(env, ['keys', 'create', '--account', account.id, '--name', 'Dev', '--mode', 'test'])).token;
      made.email = 'ada@acme.test';
      await runJson(env, ['users', 'add', '--account', account.id, '--email', made.email, '--password', password]);
      await runJson(env, ['agents', 'add', '--account', account.id, '--agent-id', 'agent_reminders', '--name', 'Reminders']);
      await runJson(env, ['suppressions', 'add', '--account', account.id, '--to', '+14155550199', '--reason', 'Asked not to be called']);
      const succeeding = await runJson(env, ['webhooks', 'create', '--account', account.id, '--url', receiver.url, '--mode', 'live']);
      made.secrets = [succeeding.secret];

      // With a worker: calls that complete (with their content) and fail, an idempotent one, a batch whose
      // recipients complete, fail and are suppressed, and every delivery of their events succeeded.
      const recipients = ['+14155550125', '+15005550002', '+14155550199'].map((to) => ({ to }));
      const withWorker = await startApp(source.env, true);
      try {
        const first = await api(withWorker, 'POST', '/v1/calls', made.live, callBody, 'order-A-1');
        assert.equal(first.statusCode, 201, first.body);
        made.replay = first.body;
        await api(withWorker, 'POST', '/v1/calls', made.live, { ...callBody, to: '+14155550124' }, 'soon-expired');
        assert.equal((await api(withWorker, 'POST', '/v1/calls', made.live, { ...callBody, to: '+15005550001' })).statusCode, 201);
        const batch = await api(withWorker, 'POST', '/v1/batches', made.live, { agent_id: 'agent_test_simulator', recipients });
        assert.equal(batch.statusCode, 201, batch.body);
        await until('the calls and the batch to end, and their events to be delivered', async () => {
          const db = withWorker.services.db;
          const open = await db.selectFrom('calls').select('id').where('status', '=', 'initiated').execute();
          const batchOpen = await db.selectFrom('batches').select('id').where('status', '!=', 'completed').execute();
          const undelivered = await db.selectFrom('webhook_deliveries').select('id').where('status', '!=', 'succeeded').execute();
          const delivered = await db.selectFrom('webhook_deliveries').select('id').execute();
          return open.length + batchOpen.length + undelivered.length === 0 && delivered.length >= 5 ? true : undefined;
        });
        const portal = portalClient(withWorker as unknown as TestApp);
        assert.equal((await portal.signIn(made.email)).statusCode, 303);
        const created = await portal.post('/developers/api-keys', {
          name: 'Portal',
          mode: 'test',
          form_token: await portal.keyFormToken(),
        });
        assert.equal(created.statusCode, 200);
        made.portal = portal;
      } finally {
        await withWorker.close();
      }

      // Without one, as a stopped server leaves them: a call in progress, a batch waiting for its time, an
      // endpoint in the middle of a secret rotation with a delivery pending, and an expired idempotency record.
      const stopped = await startApp(source.env, false);
      try {
        made.inProgress = (await api(stopped, 'POST', '/v1/calls', made.test, { ...callBody, to: '+14155550126' })).json().id;
        const later = new Date(Date.now() + 86_400_000).toISOString();
        const waiting = await api(stopped, 'POST', '/v1/batches', made.test, {
          agent_id: 'agent_test_simulator',
          recipients,
          scheduled_at: later,
        });
        assert.equal(waiting.statusCode, 201, waiting.body);
      } finally {
        await stopped.close();
      }
      const pending = await runJson(env, ['webhooks', 'create', '--account', account.id, '--url', pendingReceiver.url, '--mode', 'test']);
      made.rotated = (await runJson(env, ['webhooks', 'rotate-secret', pending.id])).secret;
      made.secrets.push(pending.secret, made.rotated);
      made.pendingDelivery = (await runJson(env, ['webhooks', 'test', pending.id])).delivery_id;
      const handle = openDatabase(source.config);
      await handle.db
        .updateTable('idempotency_keys')
        .set({ expires_at: '2000-01-01T00:00:00.000Z' })
        .where('idempotency_key', '=', 'soon-expired')
        .execute();
      await handle.destroy();
    });

    after(async () => {
      await receiver?.close();
      await pendingReceiver?.close();
      await target?.drop();
      await source?.drop();
    });

    it('copies every table into an empty PostgreSQL database, row for row, and prints the counts as JSON', async () => {
      const result = await runJson(env, ['copy-data', '--to', (target.config as { url: string }).url]);
      assert.deepEqual(Object.keys(result), [
        'source',
        'target',
        'schema_version',
        'migrations_applied',
        'tables',
        'total_rows',
        'duration_ms',
      ]);
      assert.equal(result.source.file, (source.config as { file: string }).file);
      assert.deepEqual(Object.keys(result.target), ['host', 'port', 'database']);
      assert.match(result.schema_version, /^\d{4}-/);
      assert.equal(result.migrations_applied.at(-1), result.schema_version);
      assert.deepEqual(
        result.tables.map((table: Record<string, unknown>) => table.table),
        tables,
      );
      assert.equal(
        result.total_rows,
        result.tables.reduce((sum: number, table: { copied_rows: number }) => sum + table.copied_rows, 0),
      );

      const from = openDatabase(source.config);
      const to = openDatabase(target.config);
      try {
        for (const entry of result.tables) {
          const expected = await rowsOf(from.db, entry.table);
          const copied = await rowsOf(to.db, entry.table);
          assert.equal(entry.source_rows, expected.length, entry.table);
          assert.equal(entry.copied_rows, copied.length, entry.table);
          if (entry.not_copied_rows === 0) assert.deepEqual(copied, expected, `${entry.table} is copied exactly`);
          else assert.equal(typeof entry.not_copied_reason, 'string');
        }
        const byTable = Object.fromEntries(result.tables.map((table: Record<string, any>) => [table.table, table]));
        // Every kind of row was there to copy, but for those that exist only for moments or on failures: a
        // failing endpoint's backoff, a provider's outcome held for a dial not yet resolved, a concurrency slot
        // held while a call is placed, and the workers' liveness.
        const notMade = ['webhook_endpoint_backoffs', 'held_outcomes', 'call_slots', 'webhook_workers'];
        for (const table of tables.filter((name) => !notMade.includes(name))) {
          assert.ok(byTable[table].copied_rows > 0, `${table} had rows to copy`);
        }
        assert.equal(byTable.idempotency_keys.not_copied_rows, 1, 'the expired idempotency record is left out');
        assert.equal(byTable.webhook_workers.copied_rows, 0);
        const statuses = (await to.db.selectFrom('batch_recipients').select('status').distinct().execute()).map((row) => row.status);
        assert.ok(statuses.length >= 3, statuses.join());
      } finally {
        await from.destroy();
        await to.destroy();
      }
    });

    it('leaves a copy that the server runs on: the same keys and session, replays, and the pending delivery sent', async () => {
      const copy = await startApp(target.env, true);
      try {
        const calls = await api(copy, 'GET', '/v1/calls?limit=100', made.live);
        assert.equal(calls.statusCode, 200, calls.body);
        assert.ok(calls.json().data.length >= 3);
        const inProgress = await api(copy, 'GET', `/v1/calls/${made.inProgress}`, made.test);
        assert.equal(inProgress.statusCode, 200, inProgress.body);

        const replay = await api(copy, 'POST', '/v1/calls', made.live, callBody, 'order-A-1');
        assert.equal(replay.statusCode, 201);
        assert.equal(replay.headers['idempotent-replayed'], 'true');
        assert.equal(replay.body, made.replay);

        const portal = made.portal as PortalClient;
        const page = await portalClient(copy as unknown as TestApp).get('/developers/api-keys');
        assert.notEqual(page.statusCode, 200, 'a client without the cookie is not signed in');
        assert.equal(
          (await copy.inject({ method: 'GET', url: '/developers/api-keys', headers: { cookie: `cg_session=${portal.cookie}` } }))
            .statusCode,
          200,
        );

        const [hook] = await pendingReceiver.waitFor(1, 20_000);
        const payload = verifyWebhook(hook!, made.rotated);
        assert.equal(payload.type, 'webhook.test');
        await until('the delivery to be recorded as sent', async () => {
          const row = await copy.services.db
            .selectFrom('webhook_deliveries')
            .select('status')
            .where('id', '=', made.pendingDelivery)
            .executeTakeFirst();
          return row?.status === 'succeeded' ? true : undefined;
        });
      } finally {
        await copy.close();
      }
    });

    it('refuses a target that is not empty, and writes nothing to it', async () => {
      const to = openDatabase(target.config);
      try {
        const before = await countsOf(to.db);
        await runFailing(
          env,
          ['copy-data', '--to', (target.config as { url: string }).url],
          1,
          /target database is not empty \(rows in accounts, .*new database/,
        );
        assert.deepEqual(await countsOf(to.db), before);
      } finally {
        await to.destroy();
      }
    });

    it('rolls back a copy that fails midway: the target stays empty, and the next run copies', async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-copy-'));
      const broken = await createTestDatabase('postgres');
      try {
        await runJson(env, ['backup', '--to', path.join(dir, 'callgate.sqlite')]);
        const copyEnv = cliEnv({ CALLGATE_DATA_DIR: dir });
        // PostgreSQL's text takes no NUL character, which SQLite's does: request_logs, near the end, fails.
        const file = openDatabase({ dialect: 'sqlite', file: path.join(dir, 'callgate.sqlite') });
        const [log] = await file.db.selectFrom('request_logs').select(['id', 'path']).limit(1).execute();
        await file.db
          .updateTable('request_logs')
          .set({ path: `${log!.path}\u0000` })
          .where('id', '=', log!.id)
          .execute();
        const url = (broken.config as { url: string }).url;
        await runFailing(copyEnv, ['copy-data', '--to', url], 1, /copying request_logs failed after 0 of \d+ rows/);
        const to = openDatabase(broken.config);
        try {
          assert.ok(
            Object.values(await countsOf(to.db)).every((n) => n === 0),
            'nothing was committed',
          );
          await file.db.updateTable('request_logs').set({ path: log!.path }).where('id', '=', log!.id).execute();
          await file.destroy();
          const again = await runJson(copyEnv, ['copy-data', '--to', url]);
          assert.deepEqual(again.migrations_applied, [], 'migrated by the failed run, and accepted as empty');
          assert.equal((await countsOf(to.db)).accounts, 1);
        } finally {
          await to.destroy();
        }
      } finally {
        await broken.drop();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('shows progress per table on stderr, a summary on stdout, and never a password or a secret', async () => {
      const second = await createTestDatabase('postgres');
      try {
        const url = new URL((second.config as { url: string }).url);
        url.password = 'pw-never-printed';
        const run = await runCli(env, ['copy-data', '--to', url.toString()]);
        assert.equal(run.code, 0, run.stderr);
        assert.match(run.stderr, /^Migrating the target database…$/m);
        for (const table of tables) assert.match(run.stderr, new RegExp(`^${table}: [\\d,]+ of [\\d,]+ rows$`, 'm'));
        assert.match(run.stdout, /^Copied .*callgate\.sqlite to PostgreSQL at 127\.0\.0\.1:5432\/callgate_test_\w+ \(schema \d{4}-/);
        assert.match(run.stdout, /^TABLE +ROWS +NOT COPIED$/m);
        assert.match(run.stdout, /^idempotency_keys +\d+ +1: expired idempotency records/m);
        assert.match(run.stdout, /^total +[\d,]+/m);
        for (const secret of ['pw-never-printed', made.live, made.test, password, ...made.secrets]) {
          assert.ok(!run.stdout.includes(secret) && !run.stderr.includes(secret), 'no secret in the output');
        }
      } finally {
        await second.drop();
      }
    });

    it('refuses a --to that is not a PostgreSQL URL, a source that is not SQLite, and a missing source', async () => {
      await runFailing(
        env,
        ['copy-data', '--to', 'mysql://root:hunter22@db/callgate'],
        2,
        /--to must be a PostgreSQL URL .*got a "mysql:" URL/,
      );
      assert.ok(!(await runCli(env, ['copy-data', '--to', 'mysql://root:hunter22@db/callgate'])).stderr.includes('hunter22'));
      await runFailing(env, ['copy-data', '--to', 'postgres://127.0.0.1:5432'], 2, /--to must name the database/);
      await runFailing(env, ['copy-data'], 2, /missing option --to/);
      const url = (target.config as { url: string }).url;
      await runFailing(
        cliEnv({ DATABASE_URL: url }),
        ['copy-data', '--to', url],
        1,
        /copies from the SQLite database, but DATABASE_URL is set/,
      );
      const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-copy-'));
      try {
        await runFailing(cliEnv({ CALLGATE_DATA_DIR: empty }), ['copy-data', '--to', url], 1, /no SQLite database at .*CALLGATE_DATA_DIR/);
        assert.deepEqual(fs.readdirSync(empty), [], 'a missing source is not made');
      } finally {
        fs.rmSync(empty, { recursive: true, force: true });
      }
    });
  });
