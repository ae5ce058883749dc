/**
 * What one commit costs on this machine, the unit a created call's latency is made of: one INSERT in a
 * transaction of its own, timed from this process, at the rate of the latency measurement. SQLite: a file of
 * its own beside the target's (the same file system), in WAL mode, with the service's `synchronous = NORMAL`
 * (a commit appends to the WAL and does not wait for the disk) and with `FULL` (it waits for an fsync) to
 * show what waiting for the disk would cost. PostgreSQL: a table in the target's database, over a connection
 * of its own, with the server's `synchronous_commit = on` (the commit waits until its WAL is flushed), beside
 * a round trip that commits nothing (`select 1`).
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { percentile } from './measure.js';

export interface CommitCost {
  readonly label: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly samples: number;
}

export interface CommitCostSettings {
  readonly count: number;
  readonly ratePerSecond: number;
}

/** Times `operation` `count` times, one every 1000 / rate ms. */
async function timed(label: string, settings: CommitCostSettings, operation: () => unknown): Promise<CommitCost> {
  const times: number[] = [];
  const periodMs = 1000 / settings.ratePerSecond;
  const start = performance.now();
  for (let i = 0; i < settings.count; i++) {
    const wait = start + i * periodMs - performance.now();
    if (wait > 0) await sleep(wait);
    const before = performance.now();
    await operation();
    times.push(performance.now() - before);
  }
  const sorted = Float64Array.from(times).sort();
  return { label, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), samples: sorted.length };
}

export async function sqliteCommitCost(dir: string, settings: CommitCostSettings): Promise<CommitCost[]> {
  const results: CommitCost[] = [];
  for (const synchronous of ['NORMAL', 'FULL'] as const) {
    const sqlite = new BetterSqlite3(path.join(dir, `commit-probe-${synchronous.toLowerCase()}.sqlite`));
    try {
      sqlite.pragma('journal_mode = WAL');
      sqlite.pragma(`synchronous = ${synchronous}`);
      sqlite.exec('create table if not exists commit_probe (id integer primary key, value text not null)');
      const insert = sqlite.prepare('insert into commit_probe (value) values (?)');
      const label =
        synchronous === 'NORMAL'
          ? 'one commit, SQLite (WAL, synchronous = NORMAL, as the service)'
          : 'one commit, SQLite (WAL, synchronous = FULL: an fsync per commit)';
      results.push(await timed(label, settings, () => insert.run('x'.repeat(100))));
    } finally {
      sqlite.close();
    }
  }
  return results;
}

export async function postgresCommitCost(url: string, settings: CommitCostSettings): Promise<CommitCost[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('create table if not exists bench_commit_probe (id bigserial primary key, value text not null)');
    const insert = { name: 'bench-commit-probe', text: 'insert into bench_commit_probe (value) values ($1)', values: ['x'.repeat(100)] };
    const commit = await timed('one commit, PostgreSQL (synchronous_commit = on, as the service)', settings, () => client.query(insert));
    const roundTrip = await timed('one round trip, PostgreSQL (select 1, nothing to commit)', settings, () =>
      client.query({ name: 'bench-round-trip', text: 'select 1' }),
    );
    await client.query('drop table bench_commit_probe');
    return [commit, roundTrip];
  } finally {
    await client.end();
  }
}
