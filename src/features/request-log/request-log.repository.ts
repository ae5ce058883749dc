import type { Db } from '../../db/database.js';
import type { NewRequestLog, RequestLogRow, RequestLogSummary } from './request-log.tables.js';

export async function insertRequestLogs(db: Db, rows: readonly NewRequestLog[]): Promise<void> {
  if (rows.length > 0)
    await db
      .insertInto('request_logs')
      .values([...rows])
      .execute();
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
    // The bound lets the index seek to the cursor: the OR alone is tested row by row from the newest, so a
    // page cost as much as all the pages before it.
    query = query.where('created_at', '<=', before.createdAt);
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
    );
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
