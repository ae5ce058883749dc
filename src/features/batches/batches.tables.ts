/**
 * The tables of batches, as Kysely sees them (composed into the one `Database` by db/schema.ts). Same
 * conventions as every table: text ids and ISO 8601 UTC timestamps, JSON as text, counts as integers.
 */
import type { Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

export const batchStatuses = ['scheduled', 'running', 'paused', 'completed', 'cancelled'] as const;
export type BatchStatus = (typeof batchStatuses)[number];

export const recipientStatuses = ['queued', 'dialing', 'in_progress', 'completed', 'failed', 'cancelled'] as const;
export type RecipientStatus = (typeof recipientStatuses)[number];

/** A recipient in one of these has not ended: the batch is not complete while any has. */
export const openRecipientStatuses = ['queued', 'dialing', 'in_progress'] as const satisfies readonly RecipientStatus[];
/** What counts against a batch's max_concurrency: being dialed, or placed without an outcome yet. */
export const activeRecipientStatuses = ['dialing', 'in_progress'] as const satisfies readonly RecipientStatus[];

export interface BatchesTable {
  id: string;
  account_id: string;
  /** The key that created the batch: its calls are made with it (and in its mode). */
  api_key_id: string;
  mode: ApiKeyMode;
  /** The provider's agent id (`agent_…`), as the API shows it. */
  agent_id: string;
  /** The agent's row id, for the calls the batch places. */
  agent_ref: string;
  name: string | null;
  /** `scheduled` until `scheduled_at` has come and the dialer started it; see BatchStatus. */
  status: BatchStatus;
  scheduled_at: string;
  max_concurrency: number;
  /** The calling window (calling-window.ts CallingWindow) as JSON, `days` filled in; null: any time. */
  calling_window: string | null;
  /** `{ on, max_attempts, delay_minutes }` as JSON, defaults filled in; null: one attempt, no retry. */
  retry: string | null;
  total: number;
  created_at: string;
  updated_at: string;
  /** When the last recipient reached a final state (and `batch.completed` was written); null before. */
  completed_at: string | null;
}

export interface BatchRecipientsTable {
  id: string;
  batch_id: string;
  /** 0-based place in the request's `recipients`: the order of dialing and of listing. */
  position: number;
  to_number: string;
  reference: string | null;
  metadata: string | null;
  status: RecipientStatus;
  /** The call of its latest attempt (`call_…`), once placed. */
  call_id: string | null;
  /** Every call placed for it, oldest first, as a JSON array (`[]` before the first). */
  call_ids: string;
  /** Dials made: counted when claimed, given back when the provider could not take the call (429). */
  attempts: number;
  /** The zones its batch's calling window must be open in, as a JSON array; null without a window. */
  time_zones: string | null;
  failure_reason: string | null;
  failure_message: string | null;
  /**
   * A queued recipient is not dialed before this time: its batch's start, the opening of its calling window,
   * a backoff after a 429, or a retry's delay.
   */
  next_attempt_at: string;
  /** Times the provider answered 429 or was unavailable: the exponent of the next backoff. */
  deferrals: number;
  /**
   * While `dialing`: the end of the dialing worker's lease. Past it, the worker is taken for dead and the
   * recipient ends `failed` (`interrupted`): the provider may have placed the call, so it is never redialed.
   */
  locked_until: string | null;
  created_at: string;
  updated_at: string;
}

export interface BatchesTables {
  batches: BatchesTable;
  batch_recipients: BatchRecipientsTable;
}

export type BatchRow = Selectable<BatchesTable>;
export type RecipientRow = Selectable<BatchRecipientsTable>;
