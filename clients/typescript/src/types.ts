/**
 * TEMPORARY minimal aliases until the OpenAPI document (GET /v1/openapi.json) lands: they are replaced by
 * names derived from src/generated/openapi.ts.
 */
export type Metadata = Record<string, string | number | boolean | null>;
export interface CreateCallParams {
  agent_id: string;
  to: string;
  metadata?: Metadata;
}
export interface CallCreated {
  id: string;
  agent_id: string;
  to: string;
  status: 'initiated';
  created_at: string;
}
export interface Call {
  id: string;
  agent_id: string;
  to: string;
  status: 'initiated' | 'completed' | 'failed';
  metadata: Metadata | null;
  created_at: string;
  [field: string]: unknown;
}
export interface ListCallsParams {
  limit?: number;
  starting_after?: string;
  status?: 'initiated' | 'completed' | 'failed';
  agent_id?: string;
}
export type CreateBatchParams = { agent_id: string; recipients: { to: string; metadata?: Metadata; reference?: string }[] } & Record<
  string,
  unknown
>;
export interface Batch {
  id: string;
  status: string;
  name: string | null;
  counts: Record<string, number>;
  [field: string]: unknown;
}
export interface ListBatchesParams {
  limit?: number;
  starting_after?: string;
  status?: string;
}
export interface Recipient {
  id: string;
  to: string;
  reference: string | null;
  status: string;
  [field: string]: unknown;
}
export type ListRecipientsParams = ListBatchesParams;
export interface CreateSuppressionParams {
  to: string;
  reason?: string;
}
export interface Suppression {
  id: string;
  to: string;
  reason: string | null;
  created_at: string;
}
export interface ListSuppressionsParams {
  limit?: number;
  starting_after?: string;
}
export interface Event {
  id: string;
  type: string;
  created_at: string;
  data: Record<string, unknown>;
}
export interface ListEventsParams {
  limit?: number;
  starting_after?: string;
  type?: string;
  created_after?: string;
}
export type WebhookEvent = Event;
