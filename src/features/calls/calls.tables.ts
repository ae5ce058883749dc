import type { ColumnType, Generated, Selectable } from 'kysely';
import type { AgentProvider } from '../agents/agents.tables.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

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
  /** The dial that placed the call (null for calls placed before dials were recorded). */
  dial_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** 1 when the create's answer was lost and the call was found at the provider afterwards. */
  found_after_lost_answer: Generated<number>;
  /** The provider's judgement of an ended call: 1, 0, or null when it made none (yet). */
  analysis_successful: number | null;
  /** The structured results of an ended call (JSON, '{}' when none); null before its end and after the retention purge. */
  analysis_data: string | null;
  /** When the provider agreed to end the call (POST /v1/calls/{id}/cancel); null when nobody asked. */
  cancel_requested_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** What the provider gave at creation for ending the call later (Vapi's control URL), as given; null when nothing. */
  provider_control: ColumnType<string | null, string | null | undefined, string | null>;
}

/**
 * What the provider kept of an ended call besides its outcome, until the retention purge deletes the row
 * (0023-call-content.ts): its transcript turns and where its recording is.
 */
export interface CallContentTable {
  call_id: string;
  /** When the row was written; the purge deletes rows older than CALLGATE_TRANSCRIPT_RETENTION. */
  stored_at: string;
  /** `TranscriptTurn[]` as JSON; null when the provider kept no transcript (yet). */
  turns: string | null;
  /** `RecordingSource` as JSON; null when the provider has no recording (yet). */
  recording: string | null;
}

export interface CallsTables {
  calls: CallsTable;
  call_content: CallContentTable;
}

export type CallRow = Selectable<CallsTable>;
