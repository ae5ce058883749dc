/**
 * What callgate needs of a voice-agent provider: placing and checking calls (the call service), and
 * listing its workspace's agents and numbers (agents sync). Vendor field names stay inside each adapter;
 * failures come back as values that say whether trying again can help.
 */
import type { Result } from '../../lib/result.js';
import type { AgentProvider } from '../agents/agents.tables.js';

export interface PlaceCallRequest {
  /** The provider's agent id (ElevenLabs' `agent_…`, Retell's agent id, Vapi's assistant id). */
  readonly agentId: string;
  /** The provider's id of the number to call from, when the agent has one (Retell: the E.164 number itself). */
  readonly phoneNumberId: string | null;
  /** That number's kind at the provider (ElevenLabs: `twilio` or `sip_trunk`), when known. */
  readonly phoneNumberProvider: string | null;
  /** E.164 destination. */
  readonly to: string;
  /** Passed to the agent as dynamic variables. */
  readonly metadata: Readonly<Record<string, string | number | boolean | null>> | null;
  /**
   * callgate's id of this dial (`dial_…`), recorded before the provider is asked. Each adapter sends it where
   * the provider keeps it and can be searched by it (ElevenLabs: `user_id` and the `callgate_dial_id` dynamic
   * variable), so that `findDial` can tell whether a dial whose answer was lost placed a call.
   */
  readonly dialId: string;
}

export interface PlacedCall {
  /** The provider's conversation id; the public call id is `call_<conversationId>`. */
  readonly conversationId: string;
  /**
   * What the provider gave for ending the call later, kept as given (Vapi's `monitor.controlUrl`); absent
   * where it needs nothing. A call found after a lost answer has none: `cancelCall` reads it from the provider.
   */
  readonly control?: string | null;
}

/**
 * How a request to the provider failed. Certain answers: `rejected` (the provider said no; do not retry as
 * is), `unavailable` (nothing was done: a 429, a connection refused before the request was sent; a retry may
 * work). Uncertain answers, after which a call may exist at the provider: `timeout` (no answer in time) and
 * `uncertain` (a 5xx, a connection dropped after the request was sent, a success that cannot be read).
 */
export type ProviderFailure =
  | { readonly kind: 'rejected'; readonly message: string; readonly retryable: false }
  | { readonly kind: 'unavailable'; readonly message: string; readonly retryable: true; readonly retryAfterSeconds?: number }
  | { readonly kind: 'timeout'; readonly message: string; readonly retryable: true }
  | { readonly kind: 'uncertain'; readonly message: string; readonly retryable: true };

/** Whether a failed create may still have placed the call (so it must be looked for, never repeated blindly). */
export function mayHavePlaced(failure: ProviderFailure): boolean {
  return failure.kind === 'timeout' || failure.kind === 'uncertain';
}

/** Why a call failed (its `failure_reason`), in the order the portal's charts stack them. */
export const failureReasons = ['busy', 'no_answer', 'voicemail', 'rejected', 'cancelled', 'provider_error', 'timeout', 'unknown'] as const;
export type FailureReason = (typeof failureReasons)[number];

/** A value of the structured results an agent collects (the call's `analysis.data`). */
export type AnalysisValue = string | number | boolean | null;

/** The provider's judgement of the call and the results its agent collected, in one shape for every provider. */
export interface CallAnalysis {
  /** The provider's own judgement of whether the call succeeded; null when it made none. */
  readonly successful: boolean | null;
  readonly data: Readonly<Record<string, AnalysisValue>>;
}

/** One turn of the conversation; turns without a speaker (system, tool messages) are left out. */
export interface TranscriptTurn {
  readonly role: 'agent' | 'user';
  readonly text: string;
  /** Seconds from the start of the call, when the provider says. */
  readonly offsetSeconds: number | null;
}

/**
 * Where a call's recording is, for callgate to fetch when it is asked for: through the provider's API with
 * its key (ElevenLabs' audio endpoint, the simulator), or at a URL the provider gave (Retell, Vapi), fetched
 * without a key. Never shown to a client.
 */
export type RecordingSource = { readonly kind: 'provider' } | { readonly kind: 'url'; readonly url: string };

/**
 * What the provider kept of a call besides how it ended; each part null when it gave none (yet). A part that
 * comes later (Retell's `call_analyzed`, a second report) fills what is still missing, never a second event.
 */
export interface CallContent {
  readonly analysis: CallAnalysis | null;
  readonly turns: readonly TranscriptTurn[] | null;
  readonly recording: RecordingSource | null;
}

export type CallOutcome =
  | {
      readonly status: 'completed';
      readonly startedAt: Date;
      readonly endedAt: Date;
      readonly durationSeconds: number;
      readonly transcriptSummary: string;
      readonly content?: CallContent;
    }
  | {
      readonly status: 'failed';
      readonly reason: FailureReason;
      readonly message: string | null;
      readonly failedAt: Date;
      readonly content?: CallContent;
      /**
       * The provider refused the call at its concurrency limit after accepting the request (Retell's
       * `concurrency_limit_reached`, Vapi's concurrency-blocked start): nobody was dialed, so a batch puts
       * its recipient back in the queue without using an attempt, as after a 429.
       */
      readonly concurrencyRefused?: boolean;
    };

export type CallCheck =
  | { readonly state: 'ended'; readonly outcome: CallOutcome }
  | { readonly state: 'running'; readonly checkAgainAt: Date };

export interface CallReference {
  readonly conversationId: string;
  /** When the provider agreed to end the call (a cancel), if it did: the simulator ends it then. */
  readonly cancelRequestedAt?: Date | null;
  readonly to: string;
  readonly createdAt: Date;
  /** The call's metadata as sent (the simulator draws its analysis from it). */
  readonly metadata?: Readonly<Record<string, AnalysisValue>> | null;
}

/** A recording on its way from where the provider keeps it: its type, its length when known, the bytes as a stream. */
export interface RecordingStream {
  readonly contentType: string;
  readonly contentLength: number | null;
  readonly body: NodeJS.ReadableStream;
}

/** Why a recording cannot be had: the provider has none (any more), or it cannot be reached now. */
export type RecordingFailure = { readonly kind: 'not_available' } | ProviderFailure;

/** A call to end, as `cancelCall` is given it. */
export interface CallToCancel {
  readonly conversationId: string;
  /** What the provider gave at creation for ending it (PlacedCall.control), or null. */
  readonly control: string | null;
  readonly to: string;
  readonly createdAt: Date;
}

/**
 * What the provider said to a cancel: it is ending the call (its end comes as usual, by webhook or the
 * monitor), or the call had ended already (its end is to be read as usual too).
 */
export type CancelAnswer = { readonly state: 'ending' } | { readonly state: 'already_ended' };

/** A provider that cannot end calls: why, and what a client can do instead (the 409's message). */
export interface CannotCancel {
  readonly reason: string;
}

/** A dial whose answer was lost, as `findDial` looks for it. */
export interface DialReference {
  /** callgate's id of the dial, sent with the create request (`PlaceCallRequest.dialId`). */
  readonly dialId: string;
  /** The provider's agent id the dial asked for. */
  readonly agentId: string;
  readonly phoneNumberId: string | null;
  /** E.164 destination. */
  readonly to: string;
  /** When the create request was sent (a search starts a little before). */
  readonly askedAt: Date;
}

/** What the provider says of a dial: it placed this call, or it lists no call for it (yet). */
export type DialSearch = { readonly state: 'found'; readonly conversationId: string } | { readonly state: 'not_found' };

export interface VoiceProvider {
  readonly name: AgentProvider;
  /** How long after placing a call the monitor first asks how it stands (if no webhook told us before). */
  readonly firstCheckDelayMs: number;
  placeCall(request: PlaceCallRequest): Promise<Result<PlacedCall, ProviderFailure>>;
  /** How the call stands now; used by the call monitor for calls whose end was not reported to us. */
  checkCall(call: CallReference): Promise<Result<CallCheck, ProviderFailure>>;
  /**
   * Whether the provider placed a call for this dial (its create answer was lost): by the dial id sent with
   * it. `not_found` only says the provider lists none now; the caller decides when that is final.
   */
  findDial(dial: DialReference): Promise<Result<DialSearch, ProviderFailure>>;
  /**
   * Ends the call: hangs up a live one, cancels one still ringing. Only on providers whose `cancel` is not a
   * `CannotCancel`. Safe to repeat: asking again to end a call that is ending or over changes nothing.
   */
  readonly cancel: ((call: CallToCancel) => Promise<Result<CancelAnswer, ProviderFailure>>) | CannotCancel;
  /** The call's recording from `source`, streamed (never read whole into memory). */
  fetchRecording(call: { readonly conversationId: string }, source: RecordingSource): Promise<Result<RecordingStream, RecordingFailure>>;
}

/** An agent defined at the provider. */
export interface DirectoryAgent {
  /** The provider's agent id (ElevenLabs' `agent_…`, Retell's agent id, Vapi's assistant id). */
  readonly id: string;
  readonly name: string;
}

/** A phone number of the provider's workspace that calls can come from. */
export interface DirectoryPhoneNumber {
  /** The provider's id of the number (Retell: the E.164 number itself). */
  readonly id: string;
  /** How the provider dials out with it (ElevenLabs: `twilio` or `sip_trunk`; Vapi: `twilio`, `vonage`, …). */
  readonly kind: string;
  /** The number itself (E.164), when the provider says. */
  readonly number: string | null;
  /** The agent the workspace assigns the number to (for inbound calls), if any; of several, the one with the largest share. */
  readonly assignedAgentId: string | null;
  /**
   * Where a provider lets several agents call from one number (Retell's weighted outbound agents): each of
   * them with its share of the number's calls. Absent where a number has one agent at most.
   */
  readonly sharedBy?: readonly AgentShare[];
}

export interface AgentShare {
  readonly agentId: string;
  /** The part of the number's calls that go to this agent (Retell's weights add up to 1). */
  readonly weight: number;
}

export interface AgentListProgress {
  readonly agentsListed: number;
  readonly page: number;
}

/**
 * The agents and numbers a provider's workspace holds, for `agents sync`. Failures are worded for the
 * operator: they name the setting to check, not a retry of a call.
 */
export interface AgentDirectory {
  readonly provider: AgentProvider;
  /** Every agent, over as many pages as the provider needs; `onProgress` hears after each page. */
  listAgents(onProgress?: (progress: AgentListProgress) => void): Promise<Result<DirectoryAgent[], ProviderFailure>>;
  listPhoneNumbers(): Promise<Result<DirectoryPhoneNumber[], ProviderFailure>>;
  /** Whether the credentials are accepted, by the smallest read there is (`callgate doctor`); changes nothing. */
  checkAccess(): Promise<Result<void, ProviderFailure>>;
}
