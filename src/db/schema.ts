/**
 * The tables as Kysely sees them. Both dialects store the same shapes: ids and timestamps as text
 * (ISO 8601 UTC with milliseconds, so text order is time order), JSON as text, counts as integers.
 */
import type { Insertable, Selectable, Updateable } from 'kysely';
import type { BatchRecipientsTable, BatchesTable } from '../features/batches/batches.tables.js';

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
  /** The kind of that number at the provider (ElevenLabs: `twilio` or `sip_trunk`), when known. */
  phone_number_provider: string | null;
  /** That number itself (E.164), when the provider said (agents sync); null when set by hand. */
  phone_number: string | null;
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
  /** The batch that placed the call (`batch_…`), and its recipient's `reference`; null for single calls. */
  batch_id: string | null;
  reference: string | null;
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

export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  url: string;
  description: string;
  /** 1 or 0 (portable across both databases). */
  enabled: number;
  /** JSON array of event types, or `["*"]` for all. */
  event_types: string;
  /** `whsec_<base64>`; readable because the server must sign with it. */
  secret: string;
  /** After a rotation, the old secret keeps signing beside the new one until it expires. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  disabled_reason: string | null;
  /** First failed attempt since the last success; an endpoint failing for 5 days is disabled. */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface WebhookEventsTable {
  id: string;
  account_id: string;
  type: string;
  call_id: string | null;
  /** The envelope exactly as sent: these bytes are what gets signed. */
  payload: string;
  created_at: string;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';
export type DeliveryTrigger = 'event' | 'manual' | 'test';

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  endpoint_id: string;
  account_id: string;
  status: DeliveryStatus;
  trigger: DeliveryTrigger;
  attempt_count: number;
  next_attempt_at: string | null;
  /** A worker's claim: only the holder attempts the delivery until `locked_until`. */
  locked_by: string | null;
  locked_until: string | null;
  last_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt_number: number;
  url: string;
  attempted_at: string;
  status_code: number | null;
  duration_ms: number;
  /** The first 2 KB of the response body. */
  response_excerpt: string | null;
  error: string | null;
}

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

export interface PortalSessionsTable {
  /** SHA-256 (hex) of the session token; the token itself lives only in the user's cookie. */
  id: string;
  user_id: string;
  account_id: string;
  /** Hidden `_csrf` field of every form of the session. */
  csrf_token: string;
  created_at: string;
  /** Refreshed at most once a minute; a session unused for the idle timeout has ended. */
  last_seen_at: string;
  /** The absolute end of the session, however active. */
  expires_at: string;
}

export interface PortalFormTokensTable {
  /** The random token of one key-creation form, used once. */
  token: string;
  account_id: string;
  /** The key the form made; null only while that transaction is under way. */
  api_key_id: string | null;
  created_at: string;
}

export interface Database {
  accounts: AccountsTable;
  users: UsersTable;
  agents: AgentsTable;
  api_keys: ApiKeysTable;
  calls: CallsTable;
  idempotency_keys: IdempotencyKeysTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  request_logs: RequestLogsTable;
  portal_sessions: PortalSessionsTable;
  portal_form_tokens: PortalFormTokensTable;
  batches: BatchesTable;
  batch_recipients: BatchRecipientsTable;
}

export type AccountRow = Selectable<AccountsTable>;
export type UserRow = Selectable<UsersTable>;
export type AgentRow = Selectable<AgentsTable>;
export type NewAgentRow = Insertable<AgentsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type CallRow = Selectable<CallsTable>;
export type IdempotencyRow = Selectable<IdempotencyKeysTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookEventRow = Selectable<WebhookEventsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type RequestLogRow = Selectable<RequestLogsTable>;
export type PortalSessionRow = Selectable<PortalSessionsTable>;
