/**
 * Migrations apart from a start: `callgate migrate`, CALLGATE_MIGRATE_ON_START=false refusing a database
 * that is behind (in-process and as a real server process), and every start refusing a database migrated
 * by a newer version.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { ConfigError, loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { migrationState, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { cliEnv, runCli, runJson } from '../support/cli-runner.js';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess } from '../support/server-process.js';
import { testEnvDefaults } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

it('CALLGATE_MIGRATE_ON_START is a boolean, true by default', () => {
  assert.equal(loadConfig({}).migrateOnStart, true);
  assert.equal(loadConfig({ CALLGATE_MIGRATE_ON_START: 'false' }).migrateOnStart, false);
  assert.equal(loadConfig({ CALLGATE_MIGRATE_ON_START: 'no' }).migrateOnStart, false);
  assert.throws(
    () => loadConfig({ CALLGATE_MIGRATE_ON_START: 'later' }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /CALLGATE_MIGRATE_ON_START must be true or false, got "later"/);
      return true;
    },
  );
});

await forEachDialect('Migrations apart from a start', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    database = await createTestDatabase(dialect);
    env = cliEnv(database.env);
    handle = openDatabase(database.config);
  });
  after(async () => {
    await handle?.destroy();
    await database?.drop();
  });

  const config = (extra: Record<string, string> = {}) => loadConfig({ ...testEnvDefaults, ...database.env, ...extra });

  it('with CALLGATE_MIGRATE_ON_START=false a new database is refused at start, and by the CLI, until `callgate migrate`', async () => {
    await assert.rejects(createServices(config({ CALLGATE_MIGRATE_ON_START: 'false' })), (error: Error) => {
      assert.match(
        error.message,
        /the database is behind this version of callgate \(pending migrations: 0001-initial, .*\) and CALLGATE_MIGRATE_ON_START is false: run `npx callgate migrate` first/,
      );
      return true;
    });
    const refused = await runCli({ ...env, CALLGATE_MIGRATE_ON_START: 'false' }, ['accounts', 'list']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /run `npx callgate migrate` first/);
    assert.deepEqual((await migrationState(handle.db)).applied, [], 'nothing was migrated by the refusals');

    const server = startServerProcess({ env: { ...database.env, CALLGATE_MIGRATE_ON_START: 'false' } });
    await assert.rejects(
      server,
      /exited \(1\) before it was healthy:[\s\S]*callgate: failed to start: the database is behind[\s\S]*run `npx callgate migrate` first/,
    );

    const migrated = await runJson(env, ['migrate']);
    assert.equal(migrated.up_to_date, false);
    assert.ok(migrated.applied.includes('0001-initial') && migrated.applied.includes('0013-event-retention'));
    const again = await runCli(env, ['migrate']);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /up to date/);
    assert.deepEqual(await runJson(env, ['migrate']), { applied: [], up_to_date: true });

    const services = await createServices(config({ CALLGATE_MIGRATE_ON_START: 'false' }));
    await services.close();
    assert.equal((await runCli({ ...env, CALLGATE_MIGRATE_ON_START: 'false' }, ['accounts', 'list'])).code, 0);
  });

  it('a database migrated by a newer version is refused, with or without migrate-on-start, and by callgate migrate', async () => {
    await sql`insert into kysely_migration (name, timestamp) values (${'0999-from-the-future'}, ${new Date().toISOString()})`.execute(
      handle.db,
    );
    try {
      assert.deepEqual((await migrationState(handle.db)).unknown, ['0999-from-the-future']);
      for (const migrateOnStart of ['true', 'false']) {
        await assert.rejects(createServices(config({ CALLGATE_MIGRATE_ON_START: migrateOnStart })), (error: Error) => {
          assert.match(
            error.message,
            /migrated by a newer version of callgate \(it has migration 0999-from-the-future, which this version does not know\)/,
          );
          return true;
        });
      }
      const server = startServerProcess({ env: database.env });
      await assert.rejects(
        server,
        /exited \(1\) before it was healthy:[\s\S]*failed to start: the database was migrated by a newer version/,
      );
      const migrate = await runCli(env, ['migrate']);
      assert.equal(migrate.code, 1);
      assert.match(migrate.stderr, /newer version of callgate/);
    } finally {
      await sql`delete from kysely_migration where name = ${'0999-from-the-future'}`.execute(handle.db);
    }
  });
});
