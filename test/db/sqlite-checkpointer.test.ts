import assert from 'node:assert/strict';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { openDatabase } from '../../src/db/database.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

describe('SQLite checkpoints from a worker thread', () => {
  const databases: TestDatabase[] = [];
  after(async () => {
    for (const database of databases) await database.drop();
  });

  it('the connection stops checkpointing inside commits, and the thread copies the WAL into the file', async () => {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    assert.equal(database.config.dialect, 'sqlite');
    const file = database.config.dialect === 'sqlite' ? database.config.file : '';
    const handle = openDatabase(database.config, { backgroundCheckpoints: true });
    assert.equal(handle.dialect, 'sqlite');
    if (handle.dialect !== 'sqlite') return;
    try {
      assert.equal(handle.sqlite.pragma('wal_autocheckpoint', { simple: true }), 0);
      handle.sqlite.exec('create table t (id integer primary key, body text)');
      const insert = handle.sqlite.prepare('insert into t (body) values (?)');
      const sizeBefore = fs.statSync(file).size;
      // Each commit appends pages to the WAL; only a checkpoint writes them into the database file.
      for (let i = 0; i < 300; i++) insert.run('x'.repeat(4000));
      let size = fs.statSync(file).size;
      for (let waited = 0; size <= sizeBefore + 300 * 4000 && waited < 10_000; waited += 50) {
        await sleep(50);
        size = fs.statSync(file).size;
      }
      assert.ok(size > sizeBefore + 300 * 4000, `the database file grew from ${sizeBefore} to ${size} bytes only`);
    } finally {
      await handle.destroy();
    }
    // Everything committed is there for the next process.
    const reopened = openDatabase(database.config);
    try {
      if (reopened.dialect !== 'sqlite') return;
      assert.deepEqual(reopened.sqlite.prepare('select count(*) as n from t').get(), { n: 300 });
    } finally {
      await reopened.destroy();
    }
  });

  it('without the option the connection keeps SQLite’s own checkpoints', async () => {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    const handle = openDatabase(database.config);
    try {
      if (handle.dialect !== 'sqlite') assert.fail('expected SQLite');
      assert.equal(handle.sqlite.pragma('wal_autocheckpoint', { simple: true }), 1000);
    } finally {
      await handle.destroy();
    }
  });
});
