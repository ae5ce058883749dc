/**
 * Webhooks as event → delivery → attempt: an event is immutable, one delivery per endpoint holds its
 * status and next attempt, one attempt row per HTTP try.
 */
import type { Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

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
  /** The mode of what caused the event (a call's, a batch's), which the events API filters on; null for `webhook.test`. */
  mode: ApiKeyMode | null;
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
  /** Its event's mode (null for `webhook.test`), so that the overview counts an account's deliveries per mode from one index. */
  mode: ApiKeyMode | null;
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

export interface WebhooksTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookEventRow = Selectable<WebhookEventsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
