/**
 * What the call service needs of a voice-agent provider. Vendor field names stay inside each adapter;
 * failures come back as values that say whether trying again can help.
 */
import type { Result } from '../../lib/result.js';
import type { AgentProvider } from '../agents/agents.tables.js';

export interface PlaceCallRequest {
  /** The provider's agent id (`agent_…`). */
  readonly agentId: string;
  /** The provider's id of the number to call from, when the agent has one. */
  readonly phoneNumberId: string | null;
  /** That number's kind at the provider (ElevenLabs: `twilio` or `sip_trunk`), when known. */
  readonly phoneNumberProvider: string | null;
  /** E.164 destination. */
  readonly to: string;
  /** Passed to the agent as dynamic variables. */
  readonly metadata: Readonly<Record<string, string | number | boolean | null>> | null;
}

export interface PlacedCall {
  /** The provider's conversation id; the public call id is `call_<conversationId>`. */
  readonly conversationId: string;
}

/** `rejected`: the provider said no (do not retry as is). `unavailable`/`timeout`: a retry may work. */
export type ProviderFailure =
  | { readonly kind: 'rejected'; readonly message: string; readonly retryable: false }
  | { readonly kind: 'unavailable'; readonly message: string; readonly retryable: true; readonly retryAfterSeconds?: number }
  | { readonly kind: 'timeout'; readonly message: string; readonly retryable: true };

export type FailureReason = 'busy' | 'no_answer' | 'rejected' | 'provider_error' | 'timeout' | 'unknown';

export type CallOutcome =
  | {
      readonly status: 'completed';
      readonly startedAt: Date;
      readonly endedAt: Date;
      readonly durationSeconds: number;
      readonly transcriptSummary: string;
    }
  | { readonly status: 'failed'; readonly reason: FailureReason; readonly message: string | null; readonly failedAt: Date };

export type CallCheck =
  | { readonly state: 'ended'; readonly outcome: CallOutcome }
  | { readonly state: 'running'; readonly checkAgainAt: Date };

export interface CallReference {
  readonly conversationId: string;
  readonly to: string;
  readonly createdAt: Date;
}

export interface VoiceProvider {
  readonly name: AgentProvider;
  /** How long after placing a call the monitor first asks how it stands (if no webhook told us before). */
  readonly firstCheckDelayMs: number;
  placeCall(request: PlaceCallRequest): Promise<Result<PlacedCall, ProviderFailure>>;
  /** How the call stands now; used by the call monitor for calls whose end was not reported to us. */
  checkCall(call: CallReference): Promise<Result<CallCheck, ProviderFailure>>;
}
