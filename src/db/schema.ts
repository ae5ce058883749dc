/**
 * The tables as Kysely sees them. Both dialects store the same shapes: ids and timestamps as text
 * (ISO 8601 UTC with milliseconds, so text order is time order), JSON as text, counts as integers.
 */
import type { Insertable, Selectable, Updateable } from 'kysely';

export interface AccountsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface UsersTable {
  id: string;
  account_id: string;
  email: string;
  password_hash: string;
  created_at: string;
}

export type AgentProvider = 'simulator' | 'elevenlabs';

export interface AgentsTable {
  id: string;
  account_id: string;
  /** The provider's agent id (`agent_…`), the `agent_id` of the public API. */
  agent_id: string;
  name: string;
  provider: AgentProvider;
  phone_number_id: string | null;
  created_at: string;
}

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

export type CallStatus = 'initiated' | 'completed' | 'failed';

export interface CallsTable {
  id: string;
  account_id: string;
  api_key_id: string;
  agent_id: string;
  agent_ref: string;
  mode: ApiKeyMode;
  provider: AgentProvider;
  provider_conversation_id: string;
  to_number: string;
  metadata: string | null;
  status: CallStatus;
  created_at: string;
  updated_at: string;
  /** When the worker should next look at a call that has not ended (simulator end, reconciliation). */
  next_check_at: string | null;
  started_at: string | null;
  ended_at: string | null;
  duration_seconds: number | null;
  transcript_summary: string | null;
  failure_reason: string | null;
  failure_message: string | null;
  failed_at: string | null;
}

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

export interface Database {
  accounts: AccountsTable;
  users: UsersTable;
  agents: AgentsTable;
  api_keys: ApiKeysTable;
  calls: CallsTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type UserRow = Selectable<UsersTable>;
export type AgentRow = Selectable<AgentsTable>;
export type NewAgentRow = Insertable<AgentsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type CallRow = Selectable<CallsTable>;
export type NewCallRow = Insertable<CallsTable>;
export type CallUpdate = Updateable<CallsTable>;
export type IdempotencyRow = Selectable<IdempotencyKeysTable>;
