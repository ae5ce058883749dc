/**
 * The latency rollup of POST /v1/calls (request-log-latency.ts): its buckets and percentiles, the writer
 * adding each batch's counts to the rows of their hour on SQLite and PostgreSQL, and the retention job
 * deleting rows older than 40 days in batches. (The overview's chart of it: portal.overview-charts.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ApiKeyMode } from '../../src/features/api-keys/api-keys.tables.js';
import { bucketUpperMs, isCallCreation, latencyBucket, quantileMs } from '../../src/features/request-log/request-log-latency.js';
import { requestLogPurgeJob } from '../../src/features/request-log/request-log-purge.job.js';
import { latencyByHour, latencyRollupRetentionDays } from '../../src/features/request-log/request-log.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { requestLogRow, startTestApp, type TestApp } from '../support/test-app.js';

const hourMs = 60 * 60 * 1000;
const dayMs = 24 * hourMs;

describe('Latency buckets', () => {
  it('put a duration in the bucket whose upper edge is the first power of 2^(1/8) at or above it', () => {
    assert.equal(latencyBucket(0), 0);
    assert.equal(latencyBucket(1), 0);
    assert.equal(latencyBucket(2), 8);
    assert.equal(bucketUpperMs(8), 2);
    assert.equal(latencyBucket(100), 54);
    assert.ok(bucketUpperMs(53) < 100 && 100 <= bucketUpperMs(54));
    for (const ms of [3, 17, 250, 999, 4096, 60_000]) {
      const bucket = latencyBucket(ms);
      assert.ok(bucketUpperMs(bucket - 1) < ms && ms <= bucketUpperMs(bucket) * (1 + 1e-9), `${ms} ms in bucket ${bucket}`);
      assert.ok(bucketUpperMs(bucket) / ms < 1.0906, 'at most 9 % above the value');
    }
    assert.equal(latencyBucket(10 * 60 * 1000), latencyBucket(200_000), 'the last bucket holds every longer answer');
  });

  it('give percentiles as the upper edge of the bucket holding the rank', () => {
    const histogram = new Map([
      [54, 90],
      [88, 10],
    ]);
    assert.equal(quantileMs(histogram, 0.5), bucketUpperMs(54));
    assert.equal(quantileMs(histogram, 0.9), bucketUpperMs(54));
    assert.equal(quantileMs(histogram, 0.91), 2048);
    assert.equal(quantileMs(histogram, 0.99), 2048);
    assert.equal(quantileMs(new Map([[20, 1]]), 0.99), bucketUpperMs(20), 'one request is its own p99');
    assert.equal(quantileMs(new Map(), 0.5), null);
  });

  it('count POST /v1/calls only', () => {
    assert.ok(isCallCreation({ method: 'POST', path: '/v1/calls' }));
    assert.ok(isCallCreation({ method: 'POST', path: '/v1/calls?x=1' }));
    assert.ok(!isCallCreation({ method: 'GET', path: '/v1/calls' }));
    assert.ok(!isCallCreation({ method: 'POST', path: '/v1/calls/call_1' }));
    assert.ok(!isCallCreation({ method: 'POST', path: '/v1/callsx' }));
    assert.ok(!isCallCreation({ method: 'POST', path: '/v1/batches' }));
  });
});

await forEachDialect('Latency rollup', (dialect) => {
  let t: TestApp;
  const clock = new ManualClock(new Date('2026-11-24T10:30:00.000Z'));
  let n = 0;

  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock } });
  });
  after(async () => t?.close());

  function log(createdAt: string, durationMs: number, mode: ApiKeyMode, method = 'POST') {
    t.services.requestLog.add({ ...requestLogRow(t.seed, `req_latency_${n++}`, createdAt), method, duration_ms: durationMs }, mode);
  }
  const rows = async () =>
    (
      await t.services.db
        .selectFrom('request_latency_hourly')
        .select(['mode', 'hour', 'bucket', 'count'])
        .where('account_id', '=', t.seed.accountId)
        .orderBy('mode')
        .orderBy('hour')
        .orderBy('bucket')
        .execute()
    ).map((row) => `${row.mode} ${row.hour} ${row.bucket}: ${Number(row.count)}`);

  it('the writer adds each batch to the rows of its hour, per mode, in the statements that log it', async () => {
    log('2026-11-24T10:01:00.000Z', 100, 'test');
    log('2026-11-24T10:02:00.000Z', 100, 'test');
    log('2026-11-24T10:03:00.000Z', 2, 'live');
    log('2026-11-24T09:59:59.999Z', 100, 'test');
    log('2026-11-24T10:04:00.000Z', 100, 'test', 'GET');
    await t.services.requestLog.flush();
    log('2026-11-24T10:05:00.000Z', 100, 'test');
    log('2026-11-24T10:06:00.000Z', 2000, 'test');
    await t.services.requestLog.flush();
    assert.deepEqual(await rows(), [
      'live 2026-11-24T10 8: 1',
      'test 2026-11-24T09 54: 1',
      'test 2026-11-24T10 54: 3',
      'test 2026-11-24T10 88: 1',
    ]);
    const byHour = await latencyByHour(t.services.db, t.seed.accountId, 'test', new Date('2026-11-24T10:00:00.000Z'));
    assert.deepEqual([...byHour.keys()], ['2026-11-24T10']);
    assert.equal(quantileMs(byHour.get('2026-11-24T10')!, 0.99), 2048);
  });

  it(`the retention job deletes rollup rows older than ${latencyRollupRetentionDays} days, a batch at a time`, async () => {
    await t.services.db.deleteFrom('request_latency_hourly').execute();
    const hours = (daysAgo: number) => new Date(clock.now().getTime() - daysAgo * dayMs).toISOString().slice(0, 13);
    await t.services.db
      .insertInto('request_latency_hourly')
      .values([
        ...Array.from({ length: 6 }, (_, bucket) => ({
          account_id: t.seed.accountId,
          mode: 'test' as const,
          hour: hours(45),
          bucket,
          count: 1,
        })),
        { account_id: t.seed.accountId, mode: 'live', hour: hours(latencyRollupRetentionDays + 1), bucket: 3, count: 2 },
        { account_id: t.seed.accountId, mode: 'test', hour: hours(latencyRollupRetentionDays - 1), bucket: 3, count: 2 },
        { account_id: t.seed.accountId, mode: 'test', hour: hours(0), bucket: 3, count: 2 },
      ])
      .execute();
    const job = requestLogPurgeJob({ db: t.services.db, clock, days: 7 }, 60_000, 4);
    const passes: boolean[] = [];
    for (;;) {
      const result = await job.runOnce({ now: clock.now(), stopping: () => false });
      passes.push(Boolean(result?.more));
      if (!result?.more) break;
    }
    assert.deepEqual(passes, [true, false], 'four rows, then the other three');
    assert.deepEqual(await rows(), [`test ${hours(latencyRollupRetentionDays - 1)} 3: 2`, `test ${hours(0)} 3: 2`]);
  });
});
