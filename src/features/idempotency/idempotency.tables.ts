import type { Selectable } from 'kysely';

export type IdempotencyState = 'in_progress' | 'completed';

export interface IdempotencyKeysTable {
  api_key_id: string;
  /** Method and route template, e.g. `POST /v1/calls`. */
  route: string;
  idempotency_key: string;
  request_hash: string;
  state: IdempotencyState;
  /** Random token of the request that holds the key; only it may complete or release the record. */
  owner: string;
  response_status: number | null;
  response_body: string | null;
  response_headers: string | null;
  /** In-flight records stop locking their key after this time, so a crash never locks it forever. */
  locked_until: string;
  /** Completed records are replayed until this time (24 h after the first success), then purged. */
  expires_at: string | null;
  created_at: string;
}

export interface IdempotencyTables {
  idempotency_keys: IdempotencyKeysTable;
}

export type IdempotencyRow = Selectable<IdempotencyKeysTable>;
