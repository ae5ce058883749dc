/**
 * The Vapi organisation as an `AgentDirectory`: its assistants (`GET /assistant`, newest first, paged by
 * `createdAtLt`) and its phone numbers (`GET /phone-number`). A number's assistant is its assigned agent.
 *
 * Both lists are plain arrays, `limit` at most 1000 (100 by default), filtered by `createdAtGt|Lt|Ge|Le`,
 * ISO 8601 date-times as `createdAt` is (their OpenAPI document). That the list is newest first is
 * unconfirmed (nothing documents an order); were it not, paging by the last assistant's `createdAt` would
 * end early.
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
const maxPages = 100;

const unexpectedAnswer: ProviderFailure = { kind: 'unavailable', message: 'unexpected answer from Vapi', retryable: true };

/** `names`: the catalogue entry's words for the operator (the settings to check). */
export function createVapiDirectory(client: ProviderHttpClient, names: WorkspaceNames): AgentDirectory {
  const failure = (response: ProviderErrorResponse): ProviderFailure => workspaceRequestFailure(response, names);
  return {
    provider: 'vapi',

    async listAgents(onProgress) {
      const agents = new Map<string, DirectoryAgent>();
      let before: string | null = null;
      for (let page = 1; page <= maxPages; page++) {
        const query = new URLSearchParams({ limit: String(pageSize) });
        if (before) query.set('createdAtLt', before);
        const response = await client.request('GET', `/assistant?${query.toString()}`);
        if (response.kind !== 'ok') return err(failure(response));
        if (!Array.isArray(response.body)) return err(unexpectedAnswer);
        const items = response.body.map(record);
        const known = agents.size;
        for (const item of items) {
          if (typeof item.id !== 'string' || agents.has(item.id)) continue;
          const name = typeof item.name === 'string' && item.name.trim() !== '' ? item.name : item.id;
          agents.set(item.id, { id: item.id, name });
        }
        onProgress?.({ agentsListed: agents.size, page });
        const oldest = items.at(-1)?.createdAt;
        // A page may hold fewer than asked for and still not be the last: the list ends with a page that
        // brings no assistant not seen before.
        if (agents.size === known || typeof oldest !== 'string' || oldest === before) return ok([...agents.values()]);
        before = oldest;
      }
      return err({ kind: 'rejected', message: `more than ${maxPages} pages`, retryable: false });
    },

    async listPhoneNumbers() {
      const response = await client.request('GET', `/phone-number?limit=${pageSize}`);
      if (response.kind !== 'ok') return err(failure(response));
      if (!Array.isArray(response.body)) return err(unexpectedAnswer);
      return ok(
        response.body.map(record).flatMap((entry): DirectoryPhoneNumber[] =>
          typeof entry.id === 'string'
            ? [
                {
                  id: entry.id,
                  kind: typeof entry.provider === 'string' ? entry.provider : 'vapi',
                  number: typeof entry.number === 'string' ? entry.number : null,
                  assignedAgentId: typeof entry.assistantId === 'string' && entry.assistantId !== '' ? entry.assistantId : null,
                },
              ]
            : [],
        ),
      );
    },

    async checkAccess() {
      const response = await client.request('GET', '/assistant?limit=1');
      return response.kind === 'ok' ? ok(undefined) : err(failure(response));
    },
  };
}
