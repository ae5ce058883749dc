/**
 * A SIGTERM that comes as soon as the server says it runs (a deploy that replaces a process just started, a
 * supervisor's quick restart) is a graceful shutdown like any other: logged, the start's last steps waited
 * for, exit 0. Those steps (the demo account looked up for the start line) are held here by a lock on the
 * agents table, so the signal is sure to arrive while they run. PostgreSQL only: a SQLite reader is not
 * held by a lock.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import pg from 'pg';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess } from '../support/server-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { until } from '../support/wait.js';

await forEachDialect('A SIGTERM while the server starts', (dialect) => {
  if (dialect !== 'postgres') return;

  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
  });
  after(async () => database?.drop());

  it('shuts down gracefully when it comes right after "callgate is running"', async () => {
    const locker = new pg.Client({ connectionString: database.env.DATABASE_URL });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table agents in access exclusive mode');
      const server = await startServerProcess({
        env: { ...database.env, CALLGATE_ROLES: 'api', CALLGATE_DEMO_SEED: 'false' },
        readyWhen: 'log',
      });
      let ended = false;
      void server.exited.then(() => {
        ended = true;
      });
      process.kill(server.pid, 'SIGTERM');
      await until('the shutdown to begin, or the process to end', async () =>
        ended || server.output().includes('"msg":"shutting down"') ? true : undefined,
      );
      await locker.query('rollback');
      assert.deepEqual(await server.exited, { code: 0, signal: null }, server.output());
      assert.match(server.output(), /"signal":"SIGTERM","msg":"shutting down"/);
      assert.doesNotMatch(server.output(), /failed to start/);
    } finally {
      await locker.end();
    }
  });
});
