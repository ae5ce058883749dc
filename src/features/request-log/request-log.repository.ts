import type { Db } from '../../db/database.js';
import { sql } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { NewRequestLog, RequestLatencyHourlyTable, RequestLogRow, RequestLogSummary } from './request-log.tables.js';
import { olderThan } from '../../db/cursor.js';

/**
 * Writes a batch of the log and adds its latencies to the hourly rollup, together: a batch is counted in
 * the rollup exactly when its rows are in the log.
 */
export async function insertRequestLogs(
  db: Db,
  rows: readonly NewRequestLog[],
  latency: readonly RequestLatencyHourlyTable[] = [],
): Promise<void> {
  if (latency.length === 0) {
    if (rows.length > 0)
      await db
        .insertInto('request_logs')
        .values([...rows])
        .execute();
    return;
  }
  await db.transaction().execute(async (trx) => {
    if (rows.length > 0)
      await trx
        .insertInto('request_logs')
        .values([...rows])
        .execute();
    await trx
      .insertInto('request_latency_hourly')
      .values([...latency])
      .onConflict((oc) =>
        oc
          .columns(['account_id', 'mode', 'hour', 'bucket'])
          .doUpdateSet({ count: sql<number>`request_latency_hourly.count + excluded.count` }),
      )
      .execute();
  });
}

/** The rollup's counts of an account and mode from the hour `sinceHour` on (`2026-11-24T09`). */
export async function listLatencyCounts(
  db: Db,
  accountId: string,
  mode: ApiKeyMode,
  sinceHour: string,
): Promise<Pick<RequestLatencyHourlyTable, 'hour' | 'bucket' | 'count'>[]> {
  return db
    .selectFrom('request_latency_hourly')
    .select(['hour', 'bucket', 'count'])
    .where('account_id', '=', accountId)
    .where('mode', '=', mode)
    .where('hour', '>=', sinceHour)
    .execute();
}

/** Deletes at most `limit` rollup rows of hours before `beforeHour`, oldest first; returns how many. */
export async function purgeLatencyCounts(db: Db, beforeHour: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('request_latency_hourly')
    .where((eb) =>
      eb(
        eb.refTuple('account_id', 'mode', 'hour', 'bucket'),
        'in',
        eb
          .selectFrom('request_latency_hourly')
          .select(['account_id', 'mode', 'hour', 'bucket'])
          .where('hour', '<', beforeHour)
          .orderBy('hour')
          .limit(limit)
          .$asTuple('account_id', 'mode', 'hour', 'bucket'),
      ),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface RequestLogFilter {
  accountId: string;
  since: string;
  requestId?: string;
  /** The request the page starts after (newest first), by its place in the order. */
  before?: { readonly createdAt: string; readonly id: string };
  limit: number;
}

/** The columns of the log's table: not the bodies, up to 32 KB a row, which only a request's page shows. */
const summaryColumns = [
  'id',
  'account_id',
  'api_key_id',
  'key_prefix',
  'method',
  'path',
  'status',
  'error_code',
  'idempotency_key',
  'duration_ms',
  'replayed',
  'created_at',
] as const;

export async function listRequestLogs(db: Db, filter: RequestLogFilter): Promise<RequestLogSummary[]> {
  let query = db
    .selectFrom('request_logs')
    .select(summaryColumns)
    .where('account_id', '=', filter.accountId)
    .where('created_at', '>=', filter.since);
  if (filter.requestId) query = query.where('id', '=', filter.requestId);
  const before = filter.before;
  if (before) {
    query = query.where(olderThan(before));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/** One request of the account, bodies included, if it is not older than `since`. */
export async function findRequestLog(db: Db, accountId: string, id: string, since: string): Promise<RequestLogRow | undefined> {
  return db
    .selectFrom('request_logs')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('id', '=', id)
    .where('created_at', '>=', since)
    .executeTakeFirst();
}

/** Deletes at most `limit` rows older than `before`, oldest first; returns how many. */
export async function purgeRequestLogs(db: Db, before: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('request_logs')
    .where('id', 'in', (eb) =>
      eb.selectFrom('request_logs').select('id').where('created_at', '<', before).orderBy('created_at').limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
