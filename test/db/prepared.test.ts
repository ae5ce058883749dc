import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { preparedQuery } from '../../src/db/prepared.js';
import { forEachDialect } from '../support/dialects.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

await forEachDialect('preparedQuery', (dialect) => {
  let database: TestDatabase;
  let handle: DatabaseHandle;

  before(async () => {
    database = await createTestDatabase(dialect);
    handle = openDatabase(database.config);
    await migrateToLatest(handle.db);
    const createdAt = new Date().toISOString();
    await handle.db
      .insertInto('accounts')
      .values([
        { id: 'acct_a', name: 'A', created_at: createdAt },
        { id: 'acct_b', name: 'B', created_at: createdAt },
      ])
      .execute();
  });
  after(async () => {
    await handle.destroy();
    await database.drop();
  });

  it('builds once, then runs with each call’s own values, in and out of transactions', async () => {
    let builds = 0;
    const byId = preparedQuery('account by id', (db, p: { id: string }) => {
      builds++;
      return db.selectFrom('accounts').select(['id', 'name']).where('id', '=', p.id);
    });
    assert.deepEqual((await byId(handle.db, { id: 'acct_a' })).rows, [{ id: 'acct_a', name: 'A' }]);
    assert.deepEqual((await byId(handle.db, { id: 'acct_b' })).rows, [{ id: 'acct_b', name: 'B' }]);
    assert.deepEqual((await byId(handle.db, { id: 'acct_none' })).rows, []);
    const inTransaction = await handle.db.transaction().execute(async (trx) => (await byId(trx, { id: 'acct_b' })).rows);
    assert.deepEqual(inTransaction, [{ id: 'acct_b', name: 'B' }]);
    assert.equal(builds, 1);
  });

  it('keeps the constants of the query and puts each parameter where it was read, whatever the order', async () => {
    const rename = preparedQuery('rename account', (db, p: { name: string; id: string }) =>
      db.updateTable('accounts').set({ name: p.name }).where('id', '=', p.id).where('name', '!=', 'frozen'),
    );
    const result = await rename(handle.db, { id: 'acct_a', name: 'A2' });
    assert.equal(result.numAffectedRows, 1n);
    const names = await handle.db.selectFrom('accounts').select(['id', 'name']).orderBy('id').execute();
    assert.deepEqual(names, [
      { id: 'acct_a', name: 'A2' },
      { id: 'acct_b', name: 'B' },
    ]);
  });

  it('refuses a parameter that Kysely would not pass as a value', async () => {
    const bad = preparedQuery('raw parameter', (db, p: { id: string }) =>
      db
        .selectFrom('accounts')
        .selectAll()
        .where(sql<boolean>`id = ${sql.raw(`'${p.id}'`)}`),
    );
    await assert.rejects(() => bad(handle.db, { id: 'acct_a' }), /must be passed to Kysely as a value/);
  });
});
