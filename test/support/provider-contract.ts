/**
 * What the shared provider contract (test/providers/provider-contract.test.ts) asks of a provider's fake,
 * in callgate's terms: its settings, an agent and a number to call from, where the create body carries the
 * dial id, its webhooks for an outcome signed as the vendor signs them, what its look-up answers once a call
 * ended, a create answer lost, a workspace of several pages. Each provider's contract fake
 * (test/support/contract-fakes/<name>.ts) answers it over the fake of its API; vendor names stay there.
 */
import type { AgentInput } from '../../src/features/agents/agents.service.js';
import type { ProviderEntry } from '../../src/features/providers/provider-entry.js';
import type { RealProvider } from '../../src/features/providers/provider-catalogue.js';
import type { FailureReason } from '../../src/features/providers/provider.interface.js';
import type { FakeProviderRequest } from './fake-provider-server.js';

/** How a call ended, as the contract asks a fake to report it (times to the second: some vendors say no more). */
export type ContractOutcome =
  | { readonly status: 'completed'; readonly startedAt: Date; readonly durationSeconds: number; readonly summary: string }
  | { readonly status: 'failed'; readonly reason: FailureReason; readonly failedAt: Date };

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
   * completed call, so that their order can be turned round), signed at `timestampMs`, or with a key that
   * is not the configured one when `forged`. Its API answers the call as ended so from then on.
   */
  webhooksFor(callId: string, outcome: ContractOutcome, options: { timestampMs: number; forged?: boolean }): SignedWebhook[];
  /** Ends a call at the provider without a webhook: only its look-up says so. */
  endCallForLookup(callId: string, outcome: ContractOutcome): void;
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
