import type { Selectable } from 'kysely';

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
  created_at: string;
}

export interface RequestLogTables {
  request_logs: RequestLogsTable;
}

export type RequestLogRow = Selectable<RequestLogsTable>;
