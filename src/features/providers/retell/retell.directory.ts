/**
 * The Retell workspace as an `AgentDirectory`: its voice agents (`POST /v2/list-agents`) and its numbers
 * (`GET /v2/list-phone-numbers`). A Retell number is known by the number itself, so that is its id here.
 *
 * Both lists take `limit` (1 to 1000) and `pagination_key` in the query and answer
 * `{items, has_more, pagination_key}`; the next page is asked with the key the last one gave, until
 * `has_more` is false. The agent list has one item per agent (not per version) and is filtered to voice
 * agents in its JSON body (`filter_criteria.channel`). Their notice of 2026-07-31 retired `GET /list-agents`
 * (and with it `pagination_key_version`); the older lists, `GET /list-phone-numbers` among them, went on
 * 2026-06-15. Unconfirmed: their default page size (we always send `limit`).
 *
 * A number is bound for outbound calls to a weighted list `outbound_agents: [{agent_id, agent_version,
 * weight}]` (since 2026-03-31; one of them is picked per call that names no agent). Every agent listed
 * there may call from it: callgate always names the agent (`override_agent_id`), so the binding only says
 * which numbers an agent is meant to use; the sync gives each agent the number where its weight is largest.
 * The single `outbound_agent_id` of older numbers still counts where no list is set (their own fallback),
 * and a number bound only for inbound calls (`inbound_agents`, formerly `inbound_agent_id`) is its inbound
 * agents', as before. `agent_version` is not kept: calls go to the agent's current version.
 */
import type { Result } from '../../../lib/result.js';
import { err, ok } from '../../../lib/result.js';
import {
  record,
  workspaceRequestFailure,
  type Json,
  type ProviderHttpClient,
  type ProviderResponse,
  type WorkspaceNames,
} from '../provider-http.js';
import type { AgentDirectory, AgentShare, DirectoryAgent, DirectoryPhoneNumber, ProviderFailure } from '../provider.interface.js';

/** The most either list gives a page (their limit's maximum, which their own n8n node asks for too). */
const pageSize = 1_000;
/** A workspace with more pages than this is not plausible; stop rather than follow keys without end. */
const maxPages = 100;

const voiceAgents = { filter_criteria: { channel: { type: 'string', op: 'eq', value: 'voice' } } };

const unexpectedAnswer: ProviderFailure = { kind: 'unavailable', message: 'unexpected answer from Retell', retryable: true };

function unlistable(what: string, reason: string): ProviderFailure {
  return {
    kind: 'rejected',
    message: `${reason}, so the Retell workspace's ${what} could not be listed; try again, and if it persists report it to Retell`,
    retryable: false,
  };
}

/**
 * Every item of a v2 list, page by page. A page that says more follow but gives no key, or a key already
 * used, would have us ask for the same pages again without end: that ends the listing as a failure, as
 * more than `maxPages` pages does.
 */
async function listAll(
  names: WorkspaceNames,
  what: 'agents' | 'phone numbers',
  ask: (query: string) => Promise<ProviderResponse>,
  onPage?: (items: readonly Json[], page: number) => void,
): Promise<Result<Json[], ProviderFailure>> {
  const items: Json[] = [];
  const usedKeys = new Set<string>();
  let key: string | null = null;
  for (let page = 1; page <= maxPages; page++) {
    const query = new URLSearchParams({ limit: String(pageSize) });
    if (key !== null) query.set('pagination_key', key);
    const response = await ask(query.toString());
    if (response.kind !== 'ok') return err(workspaceRequestFailure(response, names));
    const body = record(response.body);
    if (!Array.isArray(body.items)) return err(unexpectedAnswer);
    const pageItems = body.items.map(record);
    items.push(...pageItems);
    onPage?.(pageItems, page);
    if (body.has_more !== true) return ok(items);
    const next = typeof body.pagination_key === 'string' && body.pagination_key !== '' ? body.pagination_key : null;
    if (next === null) return err(unlistable(what, `Retell said more ${what} follow but gave no pagination_key`));
    if (usedKeys.has(next)) return err(unlistable(what, `Retell gave a pagination_key of ${what} it had given before`));
    usedKeys.add(next);
    key = next;
  }
  return err(unlistable(what, `Retell listed more than ${maxPages} pages of ${what}`));
}

function weightedAgents(list: unknown): AgentShare[] {
  if (!Array.isArray(list)) return [];
  return list
    .map(record)
    .flatMap((entry): AgentShare[] =>
      typeof entry.agent_id === 'string' && entry.agent_id !== ''
        ? [{ agentId: entry.agent_id, weight: typeof entry.weight === 'number' && Number.isFinite(entry.weight) ? entry.weight : 0 }]
        : [],
    );
}

function singleAgent(id: unknown): AgentShare[] {
  return typeof id === 'string' && id !== '' ? [{ agentId: id, weight: 1 }] : [];
}

/** The agents a number is bound to (see the top of this file), outbound first. */
function sharesOf(entry: Json): AgentShare[] {
  for (const shares of [
    weightedAgents(entry.outbound_agents),
    singleAgent(entry.outbound_agent_id),
    weightedAgents(entry.inbound_agents),
    singleAgent(entry.inbound_agent_id),
  ]) {
    if (shares.length > 0) return shares;
  }
  return [];
}

function phoneNumberOf(entry: Json): DirectoryPhoneNumber[] {
  if (typeof entry.phone_number !== 'string') return [];
  const shares = sharesOf(entry);
  const largest = shares.reduce<AgentShare | null>((best, share) => (best === null || share.weight > best.weight ? share : best), null);
  return [
    {
      id: entry.phone_number,
      kind: typeof entry.phone_number_type === 'string' ? entry.phone_number_type : 'retell',
      number: entry.phone_number,
      assignedAgentId: largest?.agentId ?? null,
      sharedBy: shares,
    },
  ];
}

/** `names`: the catalogue entry's words for the operator (the settings to check). */
export function createRetellDirectory(client: ProviderHttpClient, names: WorkspaceNames): AgentDirectory {
  return {
    provider: 'retell',

    async listAgents(onProgress) {
      const agents = new Map<string, DirectoryAgent>();
      const listed = await listAll(
        names,
        'agents',
        (query) => client.request('POST', `/v2/list-agents?${query}`, voiceAgents),
        (items, page) => {
          for (const item of items) {
            // The filter asked for voice agents; a chat agent could not be called all the same.
            if (typeof item.agent_id !== 'string' || (item.channel !== undefined && item.channel !== 'voice')) continue;
            const name = typeof item.agent_name === 'string' && item.agent_name.trim() !== '' ? item.agent_name : item.agent_id;
            agents.set(item.agent_id, { id: item.agent_id, name });
          }
          onProgress?.({ agentsListed: agents.size, page });
        },
      );
      return listed.ok ? ok([...agents.values()]) : listed;
    },

    async listPhoneNumbers() {
      const listed = await listAll(names, 'phone numbers', (query) => client.request('GET', `/v2/list-phone-numbers?${query}`));
      return listed.ok ? ok(listed.value.flatMap(phoneNumberOf)) : listed;
    },

    async checkAccess() {
      // Their smallest authenticated read (the one their own n8n credential tests with).
      const response = await client.request('GET', '/get-concurrency');
      return response.kind === 'ok' ? ok(undefined) : err(workspaceRequestFailure(response, names));
    },
  };
}
