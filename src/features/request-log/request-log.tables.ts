import type { Insertable, Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

export interface RequestLogsTable {
  /** The request id (`req_…`), as in the response's X-Request-Id and error bodies. */
  id: string;
  account_id: string;
  api_key_id: string;
  key_prefix: string;
  method: string;
  path: string;
  status: number;
  error_code: string | null;
  idempotency_key: string | null;
  duration_ms: number;
  /** 1 when the answer was the stored one of its Idempotency-Key (`Idempotent-Replayed: true`), else 0. */
  replayed: number;
  created_at: string;
  /** The JSON body sent and the body answered, as text: at most 16 KB each, secrets removed (request-log-bodies.ts). */
  request_body: string | null;
  response_body: string | null;
}

export interface RequestLogTables {
  request_logs: RequestLogsTable;
  request_latency_hourly: RequestLatencyHourlyTable;
}

export type RequestLogRow = Selectable<RequestLogsTable>;
/** What the writer takes: a row, its bodies optional (absent: none). */
export type NewRequestLog = Insertable<RequestLogsTable>;
/** A row as the log's table lists it, without the bodies (its page reads those). */
export type RequestLogSummary = Omit<RequestLogRow, 'request_body' | 'response_body'>;

/**
 * Per account, mode and UTC hour, how many answers of POST /v1/calls fell in each latency bucket
 * (request-log-latency.ts); kept longer than the log itself, for the overview's 30 days of percentiles.
 */
export interface RequestLatencyHourlyTable {
  account_id: string;
  mode: ApiKeyMode;
  /** `2026-11-24T09`: the first 13 characters of the ISO timestamps of the hour. */
  hour: string;
  bucket: number;
  count: number;
}
