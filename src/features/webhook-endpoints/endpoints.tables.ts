/** Webhook endpoints: where an account's events are POSTed, signed with the endpoint's secret. */
import type { ColumnType, Selectable } from 'kysely';
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
  /** The mode of the events it receives: a test endpoint gets test-mode events only, a live one live ones. */
  mode: ColumnType<ApiKeyMode, ApiKeyMode | undefined, ApiKeyMode>;
  /** The API key that made it over POST /v1/webhook_endpoints; null for one made in the portal or with the CLI. */
  created_by_key_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface EndpointsTables {
  webhook_endpoints: WebhookEndpointsTable;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
