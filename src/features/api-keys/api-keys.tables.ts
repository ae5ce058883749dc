import type { Selectable } from 'kysely';

export type ApiKeyMode = 'live' | 'test';

export interface ApiKeysTable {
  id: string;
  account_id: string;
  name: string;
  mode: ApiKeyMode;
  /** SHA-256 (hex) of the full token; the token itself is never stored. */
  token_hash: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface ApiKeysTables {
  api_keys: ApiKeysTable;
}

export type ApiKeyRow = Selectable<ApiKeysTable>;

/**
 * A key as authentication reads it: the row, with its account's `max_concurrent_calls` read in the same
 * statement (unlocked, null: no limit), which every POST /v1/calls needs (concurrency.service.ts).
 */
export type AuthenticatedKey = ApiKeyRow & { readonly account_max_concurrent_calls: number | null };
