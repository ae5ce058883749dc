/**
 * Webhooks as event → delivery → attempt: one delivery per event and endpoint holds its status and next
 * attempt, one attempt row per HTTP try.
 */
import type { Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

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

/**
 * An endpoint's current run of attempts that got no answer (timeouts, connection failures), while it lasts:
 * from a run of `failureRunToBackOff` its deliveries wait, and one probe at a time is sent from `next_try_at`.
 */
export interface WebhookEndpointBackoffsTable {
  endpoint_id: string;
  /** Attempts in a row without an answer. */
  failures: number;
  /** Probes that failed since the deliveries began to wait: the exponent of the next wait. */
  probes: number;
  /** Null while the run is too short to wait; then when the next probe may go. */
  next_try_at: string | null;
  /** The first failure of the run. */
  since: string;
  updated_at: string;
}

/**
 * A running dispatcher (its `workerId`, the `locked_by` of its claims) and until when it counts as running:
 * it renews the row while its passes run. Each endpoint's slots are split between the live ones.
 */
export interface WebhookWorkersTable {
  id: string;
  live_until: string;
}

export interface DeliveriesTables {
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_endpoint_backoffs: WebhookEndpointBackoffsTable;
  webhook_workers: WebhookWorkersTable;
}

export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type WebhookEndpointBackoffRow = Selectable<WebhookEndpointBackoffsTable>;
