import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../src/db/database.js';
import { inOneTransaction, preparedQuery } from '../../src/db/prepared.js';
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

  const insertAccount = preparedQuery('insert account', (db, p: { id: string; name: string; createdAt: string }) =>
    db.insertInto('accounts').values({ id: p.id, name: p.name, created_at: p.createdAt }),
  );
  const accountIds = async () => (await handle.db.selectFrom('accounts').select('id').orderBy('id').execute()).map((row) => row.id);

  it('runs outside a transaction under way, never inside it: the transaction rolls back alone', async () => {
    const createdAt = new Date().toISOString();
    let insideStarted!: () => void;
    const started = new Promise<void>((resolve) => (insideStarted = resolve));
    let finishInside!: () => void;
    const finish = new Promise<void>((resolve) => (finishInside = resolve));
    const transaction = handle.db.transaction().execute(async (trx) => {
      await insertAccount(trx, { id: 'acct_rolled_back', name: 'R', createdAt });
      insideStarted();
      await finish;
      throw new Error('roll back');
    });
    await started;
    const outside = insertAccount(handle.db, { id: 'acct_outside', name: 'O', createdAt });
    finishInside();
    await assert.rejects(transaction, /roll back/);
    assert.equal((await outside).numAffectedRows, 1n);
    const ids = await accountIds();
    assert.ok(ids.includes('acct_outside'));
    assert.ok(!ids.includes('acct_rolled_back'));
  });

  it('inOneTransaction stores all of its statements or none', async () => {
    const createdAt = new Date().toISOString();
    await inOneTransaction(handle.db, [
      insertAccount.bind(handle.db, { id: 'acct_t1', name: 'T1', createdAt }),
      insertAccount.bind(handle.db, { id: 'acct_t2', name: 'T2', createdAt }),
    ]);
    await assert.rejects(() =>
      inOneTransaction(handle.db, [
        insertAccount.bind(handle.db, { id: 'acct_t3', name: 'T3', createdAt }),
        // The same id again: the second insert fails, and the first is undone with it.
        insertAccount.bind(handle.db, { id: 'acct_t1', name: 'T1 again', createdAt }),
      ]),
    );
    await handle.db
      .transaction()
      .execute((trx) => inOneTransaction(trx, [insertAccount.bind(trx, { id: 'acct_t4', name: 'T4', createdAt })]));
    const ids = await accountIds();
    assert.deepEqual(
      ids.filter((id) => id.startsWith('acct_t')),
      ['acct_t1', 'acct_t2', 'acct_t4'],
    );
  });

  it('keeps working after another process adds a column to its table', async () => {
    const createdAt = new Date().toISOString();
    const wholeAccount = preparedQuery('whole account', (db, p: { id: string }) =>
      db.selectFrom('accounts').selectAll().where('id', '=', p.id),
    );
    await insertAccount(handle.db, { id: 'acct_before', name: 'Before', createdAt });
    // At once, so that several of the pool's connections have prepared it (PostgreSQL prepares per connection).
    const manyAtOnce = (id: string) => Promise.all(Array.from({ length: 6 }, () => wholeAccount(handle.db, { id })));
    for (const result of await manyAtOnce('acct_before')) assert.equal(result.rows.length, 1);
    await sql`alter table accounts add column later_note text`.execute(handle.db);
    await insertAccount(handle.db, { id: 'acct_after', name: 'After', createdAt });
    for (const result of [...(await manyAtOnce('acct_after')), ...(await manyAtOnce('acct_after'))]) {
      const [row] = result.rows as Record<string, unknown>[];
      assert.equal(row?.name, 'After');
      assert.equal(row?.later_note, null);
    }
  });
});
