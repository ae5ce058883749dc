/**
 * What the shared provider contract (test/providers/provider-contract.test.ts) asks of a provider's fake,
 * in callgate's terms: its settings, an agent and a number to call from, where the create body carries the
 * dial id, its webhooks for an outcome signed as the vendor signs them, what its look-up answers once a call
 * ended, what a completed call kept (analysis, transcript, recording) and its analysis coming late, a
 * recording source that fails, a create answer lost, a workspace of several pages. Each provider's contract fake
 * (test/support/contract-fakes/<name>.ts) answers it over the fake of its API; vendor names stay there.
 */
import type { AgentInput } from '../../src/features/agents/agents.service.js';
import type { ProviderEntry } from '../../src/features/providers/provider-entry.js';
import type { RealProvider } from '../../src/features/providers/provider-catalogue.js';
import type { FailureReason } from '../../src/features/providers/provider.interface.js';
import type { FakeProviderRequest } from './fake-provider-server.js';

/** A value of the results a call's agent collected, as callgate shows it. */
export type ContractValue = string | number | boolean | null;

/** One turn of the conversation as GET /v1/calls/{id}/transcript shows it. */
export interface ContractTurn {
  readonly role: 'agent' | 'user';
  readonly text: string;
  readonly offsetSeconds: number | null;
}

/** A recording: its bytes and the content type the vendor sends them with. */
export interface ContractRecording {
  readonly contentType: string;
  readonly bytes: Buffer;
}

/**
 * What the provider kept of a completed call, as callgate shows it. Each fake says it in its vendor's shape,
 * with the vendor's noise beside it (tool-call turns, system messages, sentiment, evaluations), which callgate
 * must drop.
 */
export interface ContractContent {
  /** The provider's judgement of the call; null when it made none. */
  readonly successful: boolean | null;
  /** The collected results, keys as the provider names them. */
  readonly data: Readonly<Record<string, ContractValue>>;
  /** Results the provider sends as an object or a list: shown in `data` as their JSON text. */
  readonly nestedData: Readonly<Record<string, object>>;
  /** In order; [] when the provider kept none. */
  readonly turns: readonly ContractTurn[];
  readonly recording: ContractRecording | null;
}

/** How a call ended, as the contract asks a fake to report it (times to the second: some vendors say no more). */
export type ContractOutcome =
  | {
      readonly status: 'completed';
      readonly startedAt: Date;
      readonly durationSeconds: number;
      readonly summary: string;
      readonly content: ContractContent;
    }
  | { readonly status: 'failed'; readonly reason: FailureReason; readonly failedAt: Date };

export type CompletedOutcome = Extract<ContractOutcome, { status: 'completed' }>;

/** The `analysis` callgate shows for a call that had `content`: nested results as their JSON text. */
export function analysisOf(content: ContractContent): { successful: boolean | null; data: Record<string, ContractValue> } {
  const nested = Object.entries(content.nestedData).map(([key, value]) => [key, JSON.stringify(value)] as const);
  return { successful: content.successful, data: { ...content.data, ...Object.fromEntries(nested) } };
}

/** The results as the vendor sends them: plain and nested alike. */
export function vendorData(content: ContractContent): Record<string, unknown> {
  return { ...content.data, ...content.nestedData };
}

/** One webhook as the vendor sends it: the exact body and the headers that sign it. */
export interface SignedWebhook {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A number of the workspace: the provider's id of it, and the number itself. */
export interface ContractNumber {
  readonly id: string;
  readonly e164: string;
}

/** An agent of the workspace, with the number it calls from (none for an agent bound to no number). */
export interface ContractAgent {
  /** The provider's id of the agent. */
  readonly providerAgentId: string;
  readonly name: string;
  readonly number: ContractNumber | null;
}

/**
 * How a provider ends a call it is asked to end (POST /v1/calls/{id}/cancel): its stop requests, a call
 * answered, and the webhooks it sends for a call it stopped.
 */
export interface ContractCancel {
  /** The requests to end the call the fake received, oldest first: each the vendor's (path, body, credentials). */
  stopRequests(callId: string): readonly FakeProviderRequest<string>[];
  /** Whether a stop request is as the vendor documents it (its method, path, body and credentials). */
  isStopRequest(request: FakeProviderRequest<string>, callId: string): boolean;
  /** The call is answered at `startedAt` (it rang until then). */
  answer(callId: string, startedAt: Date): void;
  /**
   * The webhooks the vendor sends for a call it ended on request, signed at `timestampMs`: one nobody had
   * answered (`failed` / `cancelled`, at `failedAt`), or one answered (`completed`) with its content.
   */
  stoppedWebhooks(callId: string, outcome: ContractOutcome, options: { timestampMs: number }): SignedWebhook[];
}

/** What a contract fake is started with. */
export interface ContractFakeContext {
  /** The app's time in ms (a manual clock): what the fake stamps its calls with. */
  readonly now: () => number;
}

export interface ProviderContractFake {
  /** The catalogue entry it stands in for. */
  readonly provider: RealProvider;
  /** Every failure reason its webhooks can say (the spec's `failure_reason`s). */
  readonly failureReasons: readonly FailureReason[];
  /** How old a signed webhook may be before it is refused: the vendor's word. */
  readonly webhookToleranceMs: number;
  /** Its settings (the entry's variable names), pointing at the fake. */
  env(): Record<string, string>;
  /** The content type its recordings come in (the vendor's). */
  readonly recordingContentType: string;
  /**
   * Whether a recording is fetched at a URL the provider gave, which must be asked without any credential
   * (Retell, Vapi), rather than through its API with the key.
   */
  readonly recordingByUrl: boolean;
  /** The agent calls are placed through: in the workspace, with a number that can call out. */
  agent(): ContractAgent & { readonly number: ContractNumber };
  /** Every create request the fake received, oldest first. */
  createRequests(): readonly FakeProviderRequest<string>[];
  /** The dial id a create body carries where the provider keeps it (and lets a search find it). */
  dialIdOf(create: FakeProviderRequest<string>): unknown;
  /** The provider's id of the last call it placed. */
  placedCallId(): string;
  /**
   * The webhooks the vendor sends for a call that ended so, in the order it sends them (at least two for a
   * completed call with a recording, so that their order can be turned round), signed at `timestampMs`, or
   * with a key that is not the configured one when `forged`; a completed call's content is in them. Its API
   * answers the call as ended so from then on, and serves its recording.
   */
  webhooksFor(callId: string, outcome: ContractOutcome, options: { timestampMs: number; forged?: boolean }): SignedWebhook[];
  /** Ends a call at the provider without a webhook: only its look-up says so (with a completed call's content). */
  endCallForLookup(callId: string, outcome: ContractOutcome): void;
  /**
   * Ends a completed call as the provider first tells it, before its analysis is ready: the webhooks it sends
   * then, or none when only its look-up says so (Retell: no `call_analysis`; ElevenLabs: no
   * `data_collection_results`; Vapi: an end-of-call report without one). Transcript and recording are there.
   */
  endBeforeAnalysis(callId: string, outcome: CompletedOutcome, options: { timestampMs: number }): SignedWebhook[];
  /** The webhooks that bring the analysis afterwards; its look-up has it from then on. */
  analysisWebhooks(callId: string, outcome: CompletedOutcome, options: { timestampMs: number }): SignedWebhook[];
  /** Each request the fake received for the call's recording: whether it carried a credential of any kind. */
  recordingRequests(callId: string): { readonly credential: boolean }[];
  /** The recording source answers 5xx (`error`), or its server is gone (`gone`), until `recordingSourceUp`. */
  recordingSourceDown(how: 'error' | 'gone'): Promise<void>;
  recordingSourceUp(): Promise<void>;
  /** How often the call was looked up at the provider. */
  lookupsOf(callId: string): number;
  /** The next create's answer is lost (the connection drops), the call placed or not. */
  loseNextCreateAnswer(options: { placed: boolean }): void;
  /**
   * Makes the workspace `agents` agents (the contract agent first), listed `pageSize` to a page; each but the
   * last bound to a number of its own. Returns them.
   */
  seedWorkspace(options: { agents: number; pageSize: number }): ContractAgent[];
  /** How many pages of agents were asked for. */
  agentPagesServed(): number;
  /** Every request the fake received. */
  requestCount(): number;
  /** How it ends a call on request; null where its API cannot (callgate answers 409 cancel_not_supported). */
  readonly cancel: ContractCancel | null;
  close(): Promise<void>;
}

export type ContractFakeFactory = (context: ContractFakeContext) => Promise<ProviderContractFake>;

/** What callgate stores as an agent's number: the number itself where the provider knows it so, else its id. */
export function storedNumberId(entry: Pick<ProviderEntry, 'agents'>, number: ContractNumber): string {
  return entry.agents.number === 'from-number' ? number.e164 : number.id;
}

/** The `agents add` of a workspace agent, as the entry says its agents are added (their id, their number). */
export function agentInputOf(
  entry: Pick<ProviderEntry<RealProvider>, 'name' | 'agents'>,
  agent: ContractAgent,
  accountId: string,
  agentId = 'agent_contract',
): AgentInput {
  const ownIds = entry.agents.providerAgentId === undefined;
  return {
    accountId,
    agentId: ownIds ? agent.providerAgentId : agentId,
    name: agent.name,
    provider: entry.name,
    ...(ownIds ? {} : { providerAgentId: agent.providerAgentId }),
    phoneNumberId: agent.number && storedNumberId(entry, agent.number),
    ...(agent.number && entry.agents.number === 'from-number' ? { phoneNumber: agent.number.e164 } : {}),
  };
}
