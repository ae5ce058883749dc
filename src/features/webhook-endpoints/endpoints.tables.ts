/** Webhook endpoints: where an account's events are POSTed, signed with the endpoint's secret. */
import type { Selectable } from 'kysely';

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

export interface EndpointsTables {
  webhook_endpoints: WebhookEndpointsTable;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
