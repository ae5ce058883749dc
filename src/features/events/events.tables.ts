/**
 * Events, the outbox: immutable, written in the transaction of the change that caused them; their
 * deliveries (webhook-delivery) say where each went.
 */
import type { Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

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

export interface EventsTables {
  webhook_events: WebhookEventsTable;
}

export type WebhookEventRow = Selectable<WebhookEventsTable>;
