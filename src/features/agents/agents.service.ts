import type { Db } from '../../db/database.js';
import type { AgentProvider, AgentRow } from '../../db/schema.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import * as repo from './agents.repository.js';

export interface AgentView {
  id: string;
  account_id: string;
  agent_id: string;
  name: string;
  provider: AgentProvider;
  phone_number_id: string | null;
  created_at: string;
}

export const agentProviders: readonly AgentProvider[] = ['simulator', 'elevenlabs'];

export class AgentInputError extends Error {
  override readonly name = 'AgentInputError';
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
}

/** Adds an agent to an account, or updates the one with the same `agent_id` there. */
export async function upsertAgent(db: Db, clock: Clock, input: AgentInput): Promise<{ agent: AgentView; created: boolean }> {
  const agentId = input.agentId.trim();
  if (!/^agent_[A-Za-z0-9_-]{1,120}$/.test(agentId)) {
    throw new AgentInputError(`agent ids look like agent_… (letters, digits, _ and -), got "${input.agentId}"`);
  }
  if (!agentProviders.includes(input.provider)) {
    throw new AgentInputError(`provider must be one of ${agentProviders.join(', ')}`);
  }
  const name = input.name.trim() || agentId;
  const phoneNumberId = input.phoneNumberId?.trim() || null;
  const existing = await repo.findAgentInAccount(db, input.accountId, agentId);
  if (existing) {
    await repo.updateAgent(db, existing.id, { name, provider: input.provider, phone_number_id: phoneNumberId });
    return {
      agent: toAgentView({ ...existing, name, provider: input.provider, phone_number_id: phoneNumberId }),
      created: false,
    };
  }
  const now = clock.now();
  const row: AgentRow = {
    id: newId('agent', now.getTime()),
    account_id: input.accountId,
    agent_id: agentId,
    name,
    provider: input.provider,
    phone_number_id: phoneNumberId,
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
