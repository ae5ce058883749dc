/**
 * The ElevenLabs workspace as an `AgentDirectory`: its agents (`GET /v1/convai/agents`, paged by
 * `next_cursor`) and its phone numbers (`GET /v1/convai/phone-numbers`, one plain array). Their field names
 * stop here; `agents sync` sees agents and numbers in callgate's terms.
 */
import { err, ok } from '../../../lib/result.js';
import type { AgentDirectory, DirectoryAgent, DirectoryPhoneNumber, ProviderFailure } from '../provider.interface.js';
import {
  workspaceRequestFailure,
  type ProviderErrorResponse,
  type ProviderHttpClient as ElevenLabsClient,
  type WorkspaceNames,
} from '../provider-http.js';

const pageSize = 100;
/** A workspace with more pages than this is not plausible; stop rather than loop on a bad cursor. */
const maxPages = 1_000;

const unexpectedAnswer: ProviderFailure = { kind: 'unavailable', message: 'unexpected answer from ElevenLabs', retryable: true };

/** The numbers in an answer of GET /v1/convai/phone-numbers; null when it is not a list. */
export function phoneNumbersOf(body: unknown): DirectoryPhoneNumber[] | null {
  if (!Array.isArray(body)) return null;
  return body.flatMap((item): DirectoryPhoneNumber[] => {
    const entry = item as Record<string, unknown>;
    if (typeof entry.phone_number_id !== 'string') return [];
    const assigned = entry.assigned_agent as Record<string, unknown> | null | undefined;
    return [
      {
        id: entry.phone_number_id,
        kind: typeof entry.provider === 'string' ? entry.provider : 'unknown',
        number: typeof entry.phone_number === 'string' ? entry.phone_number : null,
        assignedAgentId: assigned && typeof assigned.agent_id === 'string' ? assigned.agent_id : null,
      },
    ];
  });
}

/** `names`: the catalogue entry's words for the operator (the settings to check). */
export function createElevenLabsDirectory(client: ElevenLabsClient, names: WorkspaceNames): AgentDirectory {
  const workspaceFailure = (response: ProviderErrorResponse): ProviderFailure => workspaceRequestFailure(response, names);
  return {
    provider: 'elevenlabs',

    async listAgents(onProgress) {
      const agents: DirectoryAgent[] = [];
      const seenCursors = new Set<string>();
      let cursor: string | null = null;
      for (let page = 1; page <= maxPages; page++) {
        const query = new URLSearchParams({ page_size: String(pageSize) });
        if (cursor) query.set('cursor', cursor);
        const response = await client.request('GET', `/v1/convai/agents?${query.toString()}`);
        if (response.kind !== 'ok') return err(workspaceFailure(response));
        const body = (response.body ?? {}) as { agents?: unknown; next_cursor?: unknown; has_more?: unknown };
        if (!Array.isArray(body.agents)) return err(unexpectedAnswer);
        for (const item of body.agents as Record<string, unknown>[]) {
          if (typeof item.agent_id !== 'string') continue;
          agents.push({ id: item.agent_id, name: typeof item.name === 'string' ? item.name : item.agent_id });
        }
        onProgress?.({ agentsListed: agents.length, page });
        const next = typeof body.next_cursor === 'string' && body.next_cursor !== '' ? body.next_cursor : null;
        if (body.has_more !== true || next === null || seenCursors.has(next)) return ok(agents);
        seenCursors.add(next);
        cursor = next;
      }
      return err({ kind: 'rejected', message: `more than ${maxPages} pages`, retryable: false });
    },

    async checkAccess() {
      const response = await client.request('GET', '/v1/convai/agents?page_size=1');
      if (response.kind !== 'ok') return err(workspaceFailure(response));
      return ok(undefined);
    },

    async listPhoneNumbers() {
      const response = await client.request('GET', '/v1/convai/phone-numbers');
      if (response.kind !== 'ok') return err(workspaceFailure(response));
      const numbers = phoneNumbersOf(response.body);
      return numbers ? ok(numbers) : err(unexpectedAnswer);
    },
  };
}
