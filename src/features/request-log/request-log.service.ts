/**
 * The request log of the developer portal: every authenticated API request (time, key prefix, method and
 * path, status, error code, request id), kept for 7 days. Rows are buffered and written in small batches,
 * so logging adds no transaction to the request path; a crash can lose the last few rows, never a call.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { failureLogLevel } from '../../db/unavailable.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { retentionBatchSize } from '../../jobs/retention.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import { hourOf, LatencyTally, type LatencyHistogram } from './request-log-latency.js';
import * as repo from './request-log.repository.js';
import type { NewRequestLog, RequestLogRow, RequestLogSummary } from './request-log.tables.js';

export const requestLogRetentionMs = 7 * 24 * 60 * 60 * 1000;
const flushDelayMs = 50;
const maxBuffered = 500;

export class RequestLogWriter {
  private buffer: NewRequestLog[] = [];
  private latency = new LatencyTally();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly logger: FastifyBaseLogger,
  ) {}

  /** Buffers a row; `mode` is its key's, which the latency rollup of POST /v1/calls is kept by. */
  add(row: NewRequestLog, mode?: ApiKeyMode): void {
    this.buffer.push(row);
    if (mode) this.latency.add(row, mode);
    if (this.buffer.length >= maxBuffered) void this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), flushDelayMs);
      this.timer.unref();
    }
  }

  /** Writes what is buffered; resolves when it is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const rows = this.buffer;
    const latency = this.latency.rows();
    this.buffer = [];
    this.latency = new LatencyTally();
    this.flushing = this.flushing.then(async () => {
      if (rows.length === 0) return;
      try {
        await repo.insertRequestLogs(this.db, rows, latency);
      } catch (error) {
        this.logger[failureLogLevel(error)]({ err: error, count: rows.length }, 'could not write the request log');
      }
    });
    return this.flushing;
  }
}

/**
 * The account's requests of the last 7 days, newest first, a page at a time: `before` is the id of the last
 * request of the previous page (one of this account's, else the page is empty). `hasMore` says whether
 * older requests follow.
 */
export async function listRecentRequests(
  db: Db,
  clock: Clock,
  accountId: string,
  options: { requestId?: string; before?: string; limit?: number } = {},
): Promise<{ rows: RequestLogSummary[]; hasMore: boolean }> {
  const since = isoTimestamp(addMs(clock.now(), -requestLogRetentionMs));
  const limit = Math.min(Math.max(options.limit ?? 100, 1), 500);
  let before: { createdAt: string; id: string } | undefined;
  if (options.before) {
    const [cursor] = await repo.listRequestLogs(db, { accountId, since, requestId: options.before, limit: 1 });
    if (!cursor) return { rows: [], hasMore: false };
    before = { createdAt: cursor.created_at, id: cursor.id };
  }
  const rows = await repo.listRequestLogs(db, {
    accountId,
    since,
    limit: limit + 1,
    ...(options.requestId ? { requestId: options.requestId.trim() } : {}),
    ...(before ? { before } : {}),
  });
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** One request of the account's last 7 days with its bodies (the portal's request page), or null. */
export async function getRecentRequest(db: Db, clock: Clock, accountId: string, id: string): Promise<RequestLogRow | null> {
  if (id.includes('\u0000')) return null;
  const since = isoTimestamp(addMs(clock.now(), -requestLogRetentionMs));
  return (await repo.findRequestLog(db, accountId, id, since)) ?? null;
}

/** How long the latency rollup of POST /v1/calls is kept: longer than the 30 days the overview shows. */
export const latencyRollupRetentionDays = 40;

/**
 * The latency histograms of the account's POST /v1/calls in `mode`, per UTC hour (`2026-11-24T09`), from the
 * hour `sinceHour` on.
 */
export async function latencyByHour(db: Db, accountId: string, mode: ApiKeyMode, since: Date): Promise<Map<string, LatencyHistogram>> {
  const byHour = new Map<string, LatencyHistogram>();
  for (const { hour, bucket, count } of await repo.listLatencyCounts(db, accountId, mode, hourOf(isoTimestamp(since)))) {
    const histogram = byHour.get(hour) ?? new Map<number, number>();
    histogram.set(bucket, (histogram.get(bucket) ?? 0) + Number(count));
    byHour.set(hour, histogram);
  }
  return byHour;
}

/** Deletes at most `limit` rows of the latency rollup older than its retention; returns how many. */
export async function purgeOldLatency(db: Db, clock: Clock, limit = retentionBatchSize): Promise<number> {
  const before = hourOf(isoTimestamp(addMs(clock.now(), -latencyRollupRetentionDays * 24 * 60 * 60 * 1000)));
  return repo.purgeLatencyCounts(db, before, limit);
}

/**
 * Deletes at most `limit` requests older than `days` (CALLGATE_REQUEST_LOG_DAYS); returns how many. The
 * portal shows the last 7 days whatever is kept.
 */
export async function purgeOldRequests(
  db: Db,
  clock: Clock,
  options: { readonly days?: number; readonly limit?: number } = {},
): Promise<number> {
  const retentionMs = options.days === undefined ? requestLogRetentionMs : options.days * 24 * 60 * 60 * 1000;
  return repo.purgeRequestLogs(db, isoTimestamp(addMs(clock.now(), -retentionMs)), options.limit ?? retentionBatchSize);
}
