import type { Db } from '../../db/database.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import * as repo from './agents.repository.js';
import type { AgentProvider, AgentRow } from './agents.tables.js';

/** An agent as shown to people: every stored field is public within its account. */
export type AgentView = AgentRow;

export const agentProviders: readonly AgentProvider[] = ['simulator', 'elevenlabs'];

export class AgentInputError extends Error {
  override readonly name = 'AgentInputError';
}

/**
 * An agent's provider is not configured on this server. Only the CLI creates agents (no HTTP route does);
 * it prints the message, which names the missing setting. A call through an agent that was created before
 * the setting went away is answered 503 provider_unavailable naming it too (provider-registry.ts).
 */
export class ProviderNotConfiguredError extends Error {
  override readonly name = 'ProviderNotConfiguredError';
}

/** Which providers this server can place calls with; agents of the others are refused at creation. */
export interface AgentPolicy {
  /** Provider → the setting that is missing, e.g. `elevenlabs` → `ELEVENLABS_API_KEY`. */
  readonly unavailableProviders: ReadonlyMap<AgentProvider, string>;
}

export function agentPolicyFor(config: { elevenlabs: { apiKey: string | undefined } }): AgentPolicy {
  const unavailable = new Map<AgentProvider, string>();
  if (!config.elevenlabs.apiKey) unavailable.set('elevenlabs', 'ELEVENLABS_API_KEY');
  return { unavailableProviders: unavailable };
}

export function toAgentView(row: AgentRow): AgentView {
  return { ...row };
}

export interface AgentInput {
  accountId: string;
  agentId: string;
  name: string;
  provider: AgentProvider;
  phoneNumberId?: string | null;
  /** The phone number's kind at the provider (`twilio`, `sip_trunk`), when known. */
  phoneNumberProvider?: string | null;
  /** The number itself (E.164), when known; left out, the agent keeps the one it had for the same id. */
  phoneNumber?: string | null;
}

/** Adds an agent to an account, or updates the one with the same `agent_id` there. */
export async function upsertAgent(
  db: Db,
  clock: Clock,
  input: AgentInput,
  policy: AgentPolicy = { unavailableProviders: new Map() },
): Promise<{ agent: AgentView; created: boolean }> {
  const agentId = input.agentId.trim();
  if (!/^agent_[A-Za-z0-9_-]{1,120}$/.test(agentId)) {
    throw new AgentInputError(`agent ids look like agent_… (letters, digits, _ and -), got "${input.agentId}"`);
  }
  if (!agentProviders.includes(input.provider)) {
    throw new AgentInputError(`provider must be one of ${agentProviders.join(', ')}`);
  }
  const missingSetting = policy.unavailableProviders.get(input.provider);
  if (missingSetting) {
    throw new ProviderNotConfiguredError(
      `agents of provider ${input.provider} cannot be added: this server has no ${missingSetting} set`,
    );
  }
  const name = input.name.trim() || agentId;
  const phoneNumberId = input.phoneNumberId?.trim() || null;
  const existing = await repo.findAgentInAccount(db, input.accountId, agentId);
  const keptNumber = existing && existing.phone_number_id === phoneNumberId ? existing.phone_number : null;
  const changes = {
    name,
    provider: input.provider,
    phone_number_id: phoneNumberId,
    phone_number_provider: phoneNumberId ? input.phoneNumberProvider?.trim() || null : null,
    phone_number: phoneNumberId ? (input.phoneNumber === undefined ? keptNumber : input.phoneNumber?.trim() || null) : null,
  };
  if (existing) {
    await repo.updateAgent(db, existing.id, changes);
    return { agent: toAgentView({ ...existing, ...changes }), created: false };
  }
  const now = clock.now();
  const row: AgentRow = {
    id: newId('agent', now.getTime()),
    account_id: input.accountId,
    agent_id: agentId,
    ...changes,
    created_at: isoTimestamp(now),
  };
  await repo.insertAgent(db, row);
  return { agent: toAgentView(row), created: true };
}

export async function listAgents(db: Db, accountId: string): Promise<AgentView[]> {
  return (await repo.listAgentsByAccount(db, accountId)).map(toAgentView);
}

export async function findAgent(db: Db, accountId: string, agentId: string): Promise<AgentRow | undefined> {
  return repo.findAgentInAccount(db, accountId, agentId);
}
