/**
 * `callgate agents sync`: brings an account's agents in line with the ElevenLabs workspace. Lists every
 * agent (following cursors) and the phone numbers, then adds or updates each agent with the number
 * assigned to it (or the free number it was given by hand), so that calls know which number and endpoint
 * to use.
 */
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { ElevenLabsClient } from '../providers/elevenlabs/elevenlabs.client.js';
import { workspaceFailure } from '../providers/elevenlabs/elevenlabs.mapping.js';
import { phoneNumbersOf, type PhoneNumber } from '../providers/elevenlabs/elevenlabs.provider.js';
import { AgentInputError, listAgents, upsertAgent, type AgentView } from './agents.service.js';

export class AgentSyncError extends Error {
  override readonly name = 'AgentSyncError';
}

export interface SyncProgress {
  readonly agentsListed: number;
  readonly page: number;
}

export interface SyncResult {
  added: number;
  updated: number;
  agents: AgentView[];
  /** Remote agents whose id cannot be used here, with the reason. */
  skipped: { agent_id: string; reason: string }[];
}

const pageSize = 100;
/** A workspace with more pages than this is not plausible; stop rather than loop on a bad cursor. */
const maxPages = 1_000;

interface RemoteAgent {
  agentId: string;
  name: string;
}

async function listRemoteAgents(client: ElevenLabsClient, onProgress?: (progress: SyncProgress) => void): Promise<RemoteAgent[]> {
  const agents: RemoteAgent[] = [];
  const seenCursors = new Set<string>();
  let cursor: string | null = null;
  for (let page = 1; page <= maxPages; page++) {
    const query = new URLSearchParams({ page_size: String(pageSize) });
    if (cursor) query.set('cursor', cursor);
    const response = await client.request('GET', `/v1/convai/agents?${query.toString()}`);
    if (response.kind !== 'ok') throw new AgentSyncError(`could not list agents: ${workspaceFailure(response)}`);
    const body = (response.body ?? {}) as { agents?: unknown; next_cursor?: unknown; has_more?: unknown };
    if (!Array.isArray(body.agents)) throw new AgentSyncError('could not list agents: unexpected answer from ElevenLabs');
    for (const item of body.agents as Record<string, unknown>[]) {
      if (typeof item.agent_id !== 'string') continue;
      agents.push({ agentId: item.agent_id, name: typeof item.name === 'string' ? item.name : item.agent_id });
    }
    onProgress?.({ agentsListed: agents.length, page });
    const next = typeof body.next_cursor === 'string' && body.next_cursor !== '' ? body.next_cursor : null;
    if (body.has_more !== true || next === null || seenCursors.has(next)) return agents;
    seenCursors.add(next);
    cursor = next;
  }
  throw new AgentSyncError(`could not list agents: more than ${maxPages} pages`);
}

export async function syncElevenLabsAgents(
  db: Db,
  clock: Clock,
  client: ElevenLabsClient,
  accountId: string,
  onProgress?: (progress: SyncProgress) => void,
): Promise<SyncResult> {
  const remote = await listRemoteAgents(client, onProgress);
  const numbersResponse = await client.request('GET', '/v1/convai/phone-numbers');
  if (numbersResponse.kind !== 'ok') throw new AgentSyncError(`could not list phone numbers: ${workspaceFailure(numbersResponse)}`);
  const numbers = phoneNumbersOf(numbersResponse.body);
  if (!numbers) throw new AgentSyncError('could not list phone numbers: unexpected answer from ElevenLabs');
  const numberOfAgent = new Map<string, PhoneNumber>();
  for (const number of numbers) {
    if (number.assignedAgentId && !numberOfAgent.has(number.assignedAgentId)) numberOfAgent.set(number.assignedAgentId, number);
  }
  const unassigned = new Map(numbers.filter((number) => number.assignedAgentId === null).map((number) => [number.phoneNumberId, number]));
  const local = new Map((await listAgents(db, accountId)).map((agent) => [agent.agent_id, agent]));
  /**
   * The agent's number: the one the workspace assigns to it, else the one it has here if that number is
   * still in the workspace and nobody's. Assignment is for inbound calls; an outbound call may use any
   * number, so a number set by hand (`agents add --phone-number-id`) must survive a sync.
   */
  const numberFor = (agentId: string): PhoneNumber | undefined => {
    const assigned = numberOfAgent.get(agentId);
    if (assigned) return assigned;
    const current = local.get(agentId)?.phone_number_id;
    return current ? unassigned.get(current) : undefined;
  };
  const result: SyncResult = { added: 0, updated: 0, agents: [], skipped: [] };
  for (const agent of remote) {
    const number = numberFor(agent.agentId);
    try {
      const { agent: view, created } = await upsertAgent(db, clock, {
        accountId,
        agentId: agent.agentId,
        name: agent.name,
        provider: 'elevenlabs',
        phoneNumberId: number?.phoneNumberId ?? null,
        phoneNumberProvider: number?.provider ?? null,
        phoneNumber: number?.phoneNumber ?? null,
      });
      if (created) result.added++;
      else result.updated++;
      result.agents.push(view);
    } catch (error) {
      if (!(error instanceof AgentInputError)) throw error;
      result.skipped.push({ agent_id: agent.agentId.slice(0, 200), reason: error.message });
    }
  }
  return result;
}
