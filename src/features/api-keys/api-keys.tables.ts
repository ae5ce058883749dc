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
