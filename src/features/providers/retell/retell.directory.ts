/**
 * The Retell workspace as an `AgentDirectory`: its agents (`GET /list-agents`) and its numbers
 * (`GET /list-phone-numbers`). A Retell number is known by the number itself, so that is its id here; the
 * agent it is bound to for outbound calls is its assigned agent.
 *
 * `GET /list-agents` answers a plain array, one entry per agent *version* unless `is_latest=true`; `limit`
 * is 1 to 1000 (1000 by default); the next page starts after the pair `pagination_key` (an agent id) and
 * `pagination_key_version` (its version) of a page's last entry. Source: retell-sdk's `AgentListParams`
 * until June 2026 (our provider reference does not cover listing agents). Unconfirmed: that a short page is the
 * last (so the listing ends with an empty page), and how `is_latest` and the version key combine. Retell
 * has since deprecated both endpoints for `POST /v2/list-agents` and `GET /v2/list-phone-numbers`
 * (`{items, has_more, pagination_key}`); issue 25 names the old ones, kept here until a move is decided.
 */
import { err, ok } from '../../../lib/result.js';
import {
  record,
  workspaceRequestFailure,
  type ProviderErrorResponse,
  type ProviderHttpClient,
  type WorkspaceNames,
} from '../provider-http.js';
import type { AgentDirectory, DirectoryAgent, DirectoryPhoneNumber, ProviderFailure } from '../provider.interface.js';

const pageSize = 1_000;
/** A workspace with more pages than this is not plausible; stop rather than loop on a bad key. */
const maxPages = 100;

const unexpectedAnswer: ProviderFailure = { kind: 'unavailable', message: 'unexpected answer from Retell', retryable: true };

function assignedAgent(entry: Record<string, unknown>): string | null {
  if (typeof entry.outbound_agent_id === 'string' && entry.outbound_agent_id !== '') return entry.outbound_agent_id;
  const weighted = Array.isArray(entry.outbound_agents) ? record(entry.outbound_agents[0]).agent_id : undefined;
  if (typeof weighted === 'string' && weighted !== '') return weighted;
  return typeof entry.inbound_agent_id === 'string' && entry.inbound_agent_id !== '' ? entry.inbound_agent_id : null;
}

/** `names`: the catalogue entry's words for the operator (the settings to check). */
export function createRetellDirectory(client: ProviderHttpClient, names: WorkspaceNames): AgentDirectory {
  const failure = (response: ProviderErrorResponse): ProviderFailure => workspaceRequestFailure(response, names);
  return {
    provider: 'retell',

    async listAgents(onProgress) {
      const agents = new Map<string, DirectoryAgent>();
      const versions = new Map<string, number>();
      let after: { id: string; version: number | null } | null = null;
      for (let page = 1; page <= maxPages; page++) {
        const query = new URLSearchParams({ limit: String(pageSize), is_latest: 'true' });
        if (after) {
          query.set('pagination_key', after.id);
          if (after.version !== null) query.set('pagination_key_version', String(after.version));
        }
        const response = await client.request('GET', `/list-agents?${query.toString()}`);
        if (response.kind !== 'ok') return err(failure(response));
        if (!Array.isArray(response.body)) return err(unexpectedAnswer);
        const items = response.body.map(record);
        for (const item of items) {
          if (typeof item.agent_id !== 'string') continue;
          // Should the versions come anyway (a server that ignores is_latest), the newest one names the agent.
          const version = typeof item.version === 'number' ? item.version : -1;
          if ((versions.get(item.agent_id) ?? -Infinity) >= version) continue;
          versions.set(item.agent_id, version);
          const name = typeof item.agent_name === 'string' && item.agent_name.trim() !== '' ? item.agent_name : item.agent_id;
          agents.set(item.agent_id, { id: item.agent_id, name });
        }
        onProgress?.({ agentsListed: agents.size, page });
        // Not "a page with no new agent": listed by version, a whole page may be versions of agents already seen.
        const last = items.at(-1);
        if (!last || typeof last.agent_id !== 'string') return ok([...agents.values()]);
        const next = { id: last.agent_id, version: typeof last.version === 'number' ? last.version : null };
        if (after && after.id === next.id && after.version === next.version) return ok([...agents.values()]);
        after = next;
      }
      return err({ kind: 'rejected', message: `more than ${maxPages} pages`, retryable: false });
    },

    async listPhoneNumbers() {
      const response = await client.request('GET', '/list-phone-numbers');
      if (response.kind !== 'ok') return err(failure(response));
      if (!Array.isArray(response.body)) return err(unexpectedAnswer);
      return ok(
        response.body.map(record).flatMap((entry): DirectoryPhoneNumber[] =>
          typeof entry.phone_number === 'string'
            ? [
                {
                  id: entry.phone_number,
                  kind: typeof entry.phone_number_type === 'string' ? entry.phone_number_type : 'retell',
                  number: entry.phone_number,
                  assignedAgentId: assignedAgent(entry),
                },
              ]
            : [],
        ),
      );
    },

    async checkAccess() {
      // Their smallest authenticated read (the one their own n8n credential tests with).
      const response = await client.request('GET', '/get-concurrency');
      return response.kind === 'ok' ? ok(undefined) : err(failure(response));
    },
  };
}
