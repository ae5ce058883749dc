/**
 * The latency of POST /v1/calls over 30 days, which the request log (kept CALLGATE_REQUEST_LOG_DAYS, 7 by
 * default) cannot give: the writer adds each answer to a histogram of its account, mode and UTC hour
 * (`request_latency_hourly`), and percentiles are read back from the buckets. Buckets grow by 2^(1/8)
 * (about 9 %), so a percentile is known to within one bucket whatever the spread of the durations; a few
 * dozen rows an hour per account, however many requests.
 */
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { NewRequestLog, RequestLatencyHourlyTable } from './request-log.tables.js';

/** Buckets per doubling of the duration. */
export const bucketsPerDoubling = 8;
/** How much wider each bucket is than the one before, as the portal says it: 9 %. */
export const bucketGrowthPercent = Math.round((2 ** (1 / bucketsPerDoubling) - 1) * 100);
/** The last bucket, at 2^17 ms (about 131 s), holds every longer answer too. */
const lastBucket = 17 * bucketsPerDoubling;

/** The bucket of a duration: 0 holds up to 1 ms, bucket b holds (2^((b-1)/8), 2^(b/8)] ms. */
export function latencyBucket(durationMs: number): number {
  if (!(durationMs > 1)) return 0;
  return Math.min(lastBucket, Math.ceil(bucketsPerDoubling * Math.log2(durationMs) - 1e-9));
}

/** The upper edge of a bucket in milliseconds. */
export function bucketUpperMs(bucket: number): number {
  return 2 ** (bucket / bucketsPerDoubling);
}

/** The requests the rollup counts: every answer of POST /v1/calls, errors included (a query string ignored). */
export function isCallCreation(row: Pick<NewRequestLog, 'method' | 'path'>): boolean {
  return row.method === 'POST' && (row.path === '/v1/calls' || row.path.startsWith('/v1/calls?'));
}

/** The UTC hour of an ISO timestamp, as the rollup keys it: `2026-11-24T09`. */
export function hourOf(iso: string): string {
  return iso.slice(0, 13);
}

/** Counts of one batch of the writer, summed per row of the rollup before they are written. */
export class LatencyTally {
  private readonly counts = new Map<string, RequestLatencyHourlyTable>();

  add(row: NewRequestLog, mode: ApiKeyMode): void {
    if (!isCallCreation(row)) return;
    const hour = hourOf(row.created_at);
    const bucket = latencyBucket(row.duration_ms);
    const key = `${row.account_id}\u0000${mode}\u0000${hour}\u0000${bucket}`;
    const entry = this.counts.get(key);
    if (entry) entry.count += 1;
    else this.counts.set(key, { account_id: row.account_id, mode, hour, bucket, count: 1 });
  }

  /**
   * The rows to add, in key order: two processes adding to the same rows lock them in the same order on
   * PostgreSQL, so their upserts never deadlock.
   */
  rows(): RequestLatencyHourlyTable[] {
    return [...this.counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
  }
}

/** A latency histogram: how many answers fell in each bucket. */
export type LatencyHistogram = Map<number, number>;

/** The q-quantile (0 < q ≤ 1) of a histogram as its bucket's upper edge in ms, or null when it is empty. */
export function quantileMs(histogram: LatencyHistogram, q: number): number | null {
  let total = 0;
  for (const count of histogram.values()) total += count;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bucket of [...histogram.keys()].sort((a, b) => a - b)) {
    seen += histogram.get(bucket) ?? 0;
    if (seen >= rank) return bucketUpperMs(bucket);
  }
  return bucketUpperMs(lastBucket);
}
