/**
 * `callgate agents sync`: brings an account's agents in line with a provider's workspace. Lists every
 * agent and the phone numbers through the provider's `AgentDirectory`, then adds or updates each agent
 * with the number assigned to it (or the free number it was given by hand), so that calls know which
 * number and endpoint to use.
 *
 * The `agent_…` id each gets: an ElevenLabs agent keeps its own id (theirs look like `agent_…`). A Retell
 * or Vapi agent already in the account with the same provider id keeps the `agent_id` it has (one added by
 * hand under a name of your choice); a new one gets `agent_<provider>_<its id>`, a leading `agent_` of its
 * id dropped (Retell `agent_8f3…` → `agent_retell_8f3…`, Vapi `0b6c…` → `agent_vapi_0b6c…`).
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import type { Clock } from '../../lib/clock.js';
import { isRealProvider, providerEntry } from '../providers/provider-catalogue.js';
import { providerFailureError } from '../providers/provider-failure.js';
import type { AgentDirectory, AgentListProgress, AgentShare, DirectoryPhoneNumber } from '../providers/provider.interface.js';
import { listAgents, upsertAgent, type AgentView } from './agents.service.js';
import type { AgentProvider } from './agents.tables.js';

/** The `agent_id` a new agent synced from a provider other than ElevenLabs gets (see above). */
export function syncedAgentId(provider: AgentProvider, providerAgentId: string): string {
  return `agent_${provider}_${providerAgentId.replace(/^agent_/, '')}`;
}

export type SyncProgress = AgentListProgress;

export interface SyncResult {
  added: number;
  updated: number;
  agents: AgentView[];
  /** Remote agents whose id cannot be used here, with the reason. */
  skipped: { agent_id: string; reason: string }[];
}

function sharesOf(number: DirectoryPhoneNumber): readonly AgentShare[] {
  return number.sharedBy ?? (number.assignedAgentId ? [{ agentId: number.assignedAgentId, weight: 1 }] : []);
}

/**
 * The number each agent gets from the workspace's bindings. A number may be bound to several agents (a
 * Retell number's weighted outbound agents, one picked at random per call that names none): any of them
 * may call from it, as each call names its agent. So every agent listed on a number may have it, and an
 * agent listed on several gets the one where its weight is largest, the first listed of equals: the same
 * number on every sync of an unchanged workspace, and the one the workspace itself sends it most calls from.
 */
function assignedNumbers(numbers: readonly DirectoryPhoneNumber[]): Map<string, DirectoryPhoneNumber> {
  const best = new Map<string, { number: DirectoryPhoneNumber; weight: number }>();
  for (const number of numbers) {
    for (const { agentId, weight } of sharesOf(number)) {
      const current = best.get(agentId);
      if (!current || weight > current.weight) best.set(agentId, { number, weight });
    }
  }
  return new Map([...best].map(([agentId, { number }]) => [agentId, number]));
}

/** Fails with the provider's failure as an ApiError (provider_*) and writes nothing then. */
export async function syncAgents(
  db: Db,
  clock: Clock,
  directory: AgentDirectory,
  accountId: string,
  onProgress?: (progress: SyncProgress) => void,
): Promise<SyncResult> {
  const remote = await directory.listAgents(onProgress);
  if (!remote.ok) throw providerFailureError(remote.error, `could not list agents: ${remote.error.message}`);
  const numbers = await directory.listPhoneNumbers();
  if (!numbers.ok) throw providerFailureError(numbers.error, `could not list phone numbers: ${numbers.error.message}`);
  const numberOfAgent = assignedNumbers(numbers.value);
  const unassigned = new Map(numbers.value.filter((number) => sharesOf(number).length === 0).map((number) => [number.id, number]));
  const localAgents = await listAgents(db, accountId);
  const local = new Map(localAgents.map((agent) => [agent.agent_id, agent]));
  const ownIds = isRealProvider(directory.provider) && providerEntry(directory.provider).agents.providerAgentId !== undefined;
  const byProviderId = new Map(
    localAgents
      .filter((agent) => agent.provider === directory.provider && agent.provider_agent_id !== null)
      .map((agent) => [agent.provider_agent_id!, agent]),
  );
  const callgateIdOf = (remoteId: string): string =>
    ownIds ? (byProviderId.get(remoteId)?.agent_id ?? syncedAgentId(directory.provider, remoteId)) : remoteId;
  /**
   * The agent's number: the one the workspace assigns to it, else the one it has here if that number is
   * still in the workspace and nobody's. Assignment is for inbound calls; an outbound call may use any
   * number, so a number set by hand (`agents add --phone-number-id`) must survive a sync.
   */
  const numberFor = (remoteId: string, agentId: string): DirectoryPhoneNumber | undefined => {
    const assigned = numberOfAgent.get(remoteId);
    if (assigned) return assigned;
    const current = local.get(agentId)?.phone_number_id;
    return current ? unassigned.get(current) : undefined;
  };
  const result: SyncResult = { added: 0, updated: 0, agents: [], skipped: [] };
  for (const agent of remote.value) {
    const agentId = callgateIdOf(agent.id);
    const other = local.get(agentId);
    if (other && other.provider !== directory.provider && ownIds) {
      result.skipped.push({ agent_id: agent.id.slice(0, 200), reason: `${agentId} is already an agent of provider ${other.provider}` });
      continue;
    }
    const number = numberFor(agent.id, agentId);
    try {
      const { agent: view, created } = await upsertAgent(db, clock, {
        accountId,
        agentId,
        name: agent.name,
        provider: directory.provider,
        ...(ownIds ? { providerAgentId: agent.id } : {}),
        phoneNumberId: number?.id ?? null,
        phoneNumberProvider: number?.kind ?? null,
        phoneNumber: number?.number ?? null,
      });
      if (created) result.added++;
      else result.updated++;
      result.agents.push(view);
    } catch (error) {
      // An id this server does not take (upsertAgent's invalid_request) skips that agent, not the sync.
      if (!(error instanceof ApiError && error.code === 'invalid_request')) throw error;
      result.skipped.push({ agent_id: agent.id.slice(0, 200), reason: error.message });
    }
  }
  return result;
}
