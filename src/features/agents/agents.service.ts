import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { providerIdRule } from '../providers/provider-http.js';
import { agentProviders, isRealProvider, missingSetting, providerEntry, type ProviderConfig } from '../providers/provider-catalogue.js';
import * as repo from './agents.repository.js';
import type { Agent } from './agents.schemas.js';
import type { AgentProvider, AgentRow } from './agents.tables.js';

/** An agent as shown to people: every stored field is public within its account. */
export type AgentView = AgentRow;

/** Which providers this server can place calls with; agents of the others are refused at creation. */
export interface AgentPolicy {
  /** Provider → the setting it lacks on this server (provider-catalogue.ts). */
  readonly unavailableProviders: ReadonlyMap<AgentProvider, string>;
}

export function agentPolicyFor(config: Pick<ProviderConfig, 'providers'>): AgentPolicy {
  return {
    unavailableProviders: new Map(
      agentProviders.flatMap((provider) => {
        const setting = missingSetting(provider, config);
        return setting === undefined ? [] : [[provider, setting] as const];
      }),
    ),
  };
}

export function toAgentView(row: AgentRow): AgentView {
  return { ...row };
}

export interface AgentInput {
  accountId: string;
  agentId: string;
  name: string;
  provider: AgentProvider;
  /**
   * The provider's own id of the agent (a Retell agent id, a Vapi assistant id), which those providers
   * need; left out, an agent being updated keeps the one it had.
   */
  providerAgentId?: string | null;
  phoneNumberId?: string | null;
  /** The phone number's kind at the provider (`twilio`, `sip_trunk`), when known. */
  phoneNumberProvider?: string | null;
  /** The number itself (E.164), when known; left out, the agent keeps the one it had for the same id. */
  phoneNumber?: string | null;
}

/**
 * Adds an agent to an account, or updates the one with the same `agent_id` there. A bad id or provider is
 * `invalid_request`; a provider this server has no credentials for is `provider_unavailable`, naming the
 * setting (a call through an agent created before the setting went away is refused the same way).
 */
export async function upsertAgent(
  db: Db,
  clock: Clock,
  input: AgentInput,
  policy: AgentPolicy = { unavailableProviders: new Map() },
): Promise<{ agent: AgentView; created: boolean }> {
  const agentId = input.agentId.trim();
  if (!/^agent_[A-Za-z0-9_-]{1,120}$/.test(agentId)) {
    throw new ApiError('invalid_request', `agent ids look like agent_… (letters, digits, _ and -), got "${input.agentId}"`, {
      param: 'agent_id',
    });
  }
  if (!agentProviders.includes(input.provider)) {
    throw new ApiError('invalid_request', `provider must be one of ${agentProviders.join(', ')}`, { param: 'provider' });
  }
  const setting = policy.unavailableProviders.get(input.provider);
  if (setting) {
    throw new ApiError('provider_unavailable', `agents of provider ${input.provider} cannot be added: this server has no ${setting} set`, {
      param: 'provider',
    });
  }
  const name = input.name.trim() || agentId;
  const phoneNumberId = input.phoneNumberId?.trim() || null;
  const existing = await repo.findAgentInAccount(db, input.accountId, agentId);
  const keptNumber = existing && existing.phone_number_id === phoneNumberId ? existing.phone_number : null;
  const providerAgentId =
    input.providerAgentId === undefined
      ? existing?.provider === input.provider
        ? existing.provider_agent_id
        : null
      : input.providerAgentId?.trim() || null;
  // What the provider calls its agent id when callgate's agent_id is not it (its catalogue entry says).
  const what = isRealProvider(input.provider) ? providerEntry(input.provider).agents.providerAgentId : undefined;
  const needsProviderId = what !== undefined;
  if (needsProviderId && providerAgentId === null) {
    throw new ApiError('invalid_request', `agents of provider ${input.provider} need the ${what} (provider_agent_id)`, {
      param: 'provider_agent_id',
    });
  }
  if (providerAgentId !== null && !providerIdRule.test(providerAgentId)) {
    throw new ApiError(
      'invalid_request',
      `provider_agent_id must be 1 to 128 letters, digits, _ . : + or -, got "${providerAgentId.slice(0, 140)}"`,
      {
        param: 'provider_agent_id',
      },
    );
  }
  const changes = {
    name,
    provider: input.provider,
    provider_agent_id: needsProviderId ? providerAgentId : null,
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

/**
 * An agent as the API shows it. The provider's id of it is what a call is placed with (dial-driver.ts):
 * its own column for the providers that have one, callgate's agent id for the others.
 */
export function toAgent(row: AgentRow): Agent {
  return {
    id: row.agent_id,
    name: row.name,
    provider: row.provider,
    provider_agent_id: row.provider_agent_id ?? row.agent_id,
    created_at: row.created_at,
  };
}

/** True for text that PostgreSQL refuses as a query parameter; such a value names no agent. */
const hasNul = (text: string) => text.includes('\u0000');

/**
 * GET /v1/agents: a page of the account's agents, newest first. A starting_after that is no agent of the
 * account is a 400 naming it (a cursor cannot probe other accounts).
 */
export async function listAgentsPage(
  db: Db,
  accountId: string,
  query: { readonly limit: number; readonly startingAfter?: string },
): Promise<{ data: Agent[]; has_more: boolean }> {
  let cursor: AgentRow | undefined;
  if (query.startingAfter !== undefined) {
    cursor = hasNul(query.startingAfter) ? undefined : await repo.findAgentInAccount(db, accountId, query.startingAfter);
    if (!cursor) throw new ApiError('invalid_request', 'starting_after is not an agent of this account.', { param: 'starting_after' });
  }
  const rows = await repo.listAgentsPage(db, {
    accountId,
    limit: query.limit + 1,
    ...(cursor === undefined ? {} : { startingAfter: { createdAt: cursor.created_at, id: cursor.id } }),
  });
  return { data: rows.slice(0, query.limit).map(toAgent), has_more: rows.length > query.limit };
}

/** GET /v1/agents/{id}: the account's agent, or a 404 (another account's agent is as absent as an unknown one). */
export async function retrieveAgent(db: Db, accountId: string, agentId: string): Promise<Agent> {
  const row = hasNul(agentId) ? undefined : await repo.findAgentInAccount(db, accountId, agentId);
  if (row) return toAgent(row);
  throw new ApiError('not_found', agentId === '' ? 'An agent id is needed: GET /v1/agents/{id}.' : `No agent ${agentId} in this account.`);
}

export async function findAgent(db: Db, accountId: string, agentId: string): Promise<AgentRow | undefined> {
  return repo.findAgentInAccount(db, accountId, agentId);
}

/** The accounts that have an agent of this provider id (`agent_…`), oldest agent first. */
export async function accountsWithAgent(db: Db, agentId: string): Promise<string[]> {
  return repo.accountsWithAgent(db, agentId);
}
