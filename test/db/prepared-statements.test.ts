/**
 * Statements prepared once and run again and again (database.ts): PostgreSQL's main pool names its repeated
 * statements (`prepareRepeatedStatements`), SQLite keeps each text prepared (its statement cache). Both must
 * answer as an unprepared statement would, including a statement whose result columns changed under it (a
 * newer version's migration run by another process).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { createTestDatabase, postgresUnavailableReason, type Dialect, type TestDatabase } from '../support/test-database.js';

const requirePostgres = process.env.CALLGATE_TEST_REQUIRE_POSTGRES === '1';
const unavailable = await postgresUnavailableReason();
if (unavailable && requirePostgres) throw new Error(`CALLGATE_TEST_REQUIRE_POSTGRES=1 but ${unavailable}`);

/** A database of `dialect` with a table `prepared_probe` of two rows, made before the suite's tests and dropped after. */
function probeDatabase(dialect: Dialect): { readonly database: TestDatabase; readonly handle: DatabaseHandle } {
  let database: TestDatabase | undefined;
  let handle: DatabaseHandle | undefined;
  before(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.config);
    await sql`create table prepared_probe (id integer primary key, name text not null)`.execute(handle.db);
    await sql`insert into prepared_probe (id, name) values (1, 'one'), (2, 'two')`.execute(handle.db);
  });
  after(async () => {
    await handle?.destroy();
    await database?.drop();
  });
  return {
    get database() {
      return database!;
    },
    get handle() {
      return handle!;
    },
  };
}

describe('Prepared statements on PostgreSQL', { skip: unavailable ?? false }, () => {
  const probe = probeDatabase('postgres');
  let handle: DatabaseHandle;
  before(() => {
    handle = probe.handle;
  });

  /** One connection's prepared statements whose text is `text`, asked on that same connection. */
  async function preparedOnConnection(text: string): Promise<number> {
    return handle.db.connection().execute(async (connection) => {
      const probe = async () =>
        (await sql<{ id: number; name: string }>`select * from prepared_probe where id = ${1}`.execute(connection)).rows;
      for (let run = 0; run < 5; run++) assert.deepEqual(await probe(), [{ id: 1, name: 'one' }]);
      const { rows } = await sql<{ n: string }>`select count(*) as n from pg_prepared_statements where statement = ${text}`.execute(
        connection,
      );
      return Number(rows[0]!.n);
    });
  }

  it('prepares a statement that runs again and again, and answers it as before', async () => {
    assert.equal(await preparedOnConnection('select * from prepared_probe where id = $1'), 1);
    const { rows } = await sql<{ name: string }>`select name from prepared_probe where id = ${2}`.execute(handle.db);
    assert.deepEqual(rows, [{ name: 'two' }]);
  });

  it('runs a prepared statement whose table gained a column (a newer version migrated) with the new column', async () => {
    await handle.db.connection().execute(async (connection) => {
      const read = () => sql<Record<string, unknown>>`select * from prepared_probe where id = ${2}`.execute(connection);
      for (let run = 0; run < 5; run++) assert.deepEqual((await read()).rows, [{ id: 2, name: 'two' }]);
      await sql`alter table prepared_probe add column note text`.execute(connection);
      assert.deepEqual((await read()).rows, [{ id: 2, name: 'two', note: null }]);
    });
  });

  it('fails a transaction that meets such a change once, and runs the statement in the next one', async () => {
    await handle.db.connection().execute(async (connection) => {
      const read = () => sql<Record<string, unknown>>`select * from prepared_probe where id = ${1} for update`.execute(connection);
      for (let run = 0; run < 5; run++) assert.deepEqual((await read()).rows, [{ id: 1, name: 'one', note: null }]);
      await sql`alter table prepared_probe add column tag text`.execute(connection);
      await sql`begin`.execute(connection);
      await assert.rejects(read(), /cached plan must not change result type/);
      await sql`rollback`.execute(connection);
      await sql`begin`.execute(connection);
      assert.deepEqual((await read()).rows, [{ id: 1, name: 'one', note: null, tag: null }]);
      await sql`commit`.execute(connection);
    });
  });
});

describe('Prepared statements on SQLite', () => {
  const probe = probeDatabase('sqlite');

  it('answers a cached statement whose table gained a column (another process migrated) with the new column', async () => {
    const read = () => sql<Record<string, unknown>>`select * from prepared_probe where id = ${1}`.execute(probe.handle.db);
    for (let run = 0; run < 5; run++) assert.deepEqual((await read()).rows, [{ id: 1, name: 'one' }]);
    const other = openDatabase(probe.database.config);
    try {
      await sql`alter table prepared_probe add column note text`.execute(other.db);
    } finally {
      await other.destroy();
    }
    assert.deepEqual((await read()).rows, [{ id: 1, name: 'one', note: null }]);
  });
});
