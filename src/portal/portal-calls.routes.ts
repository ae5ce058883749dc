/** The account's calls: a filtered, paged list and a page per call with its events and their deliveries. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listAgents } from '../features/agents/agents.service.js';
import { listCallsWithMode } from '../features/calls/calls.service.js';
import type { CallRow } from '../features/calls/calls.tables.js';
import { frameUser, isPlainId, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { CallsQuery, IdParams } from './portal.schemas.js';
import { loadCallPage } from './portal.service.js';
import { callPage, callsPage, callStatuses } from './views/calls.view.js';

const pageSize = 25;

function callsUrl(filters: { status?: string | undefined; agentId?: string | undefined; startingAfter?: string }): string {
  const params = new URLSearchParams();
  if (filters.status) params.set('status', filters.status);
  if (filters.agentId) params.set('agent_id', filters.agentId);
  if (filters.startingAfter) params.set('starting_after', filters.startingAfter);
  const query = params.toString();
  return `/developers/calls${query ? `?${query}` : ''}`;
}

export const portalCallsRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/calls', { schema: { querystring: CallsQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const { status: statusParam, agent_id: agentParam, starting_after: after } = request.query;
    const status = callStatuses.find((candidate) => candidate === statusParam);
    const agentId = agentParam !== undefined && isPlainId(agentParam) ? agentParam : undefined;
    const startingAfter = after !== undefined && isPlainId(after) ? after : undefined;
    const filters = { status, agentId } satisfies { status?: CallRow['status'] | undefined; agentId?: string | undefined };
    const page = await listCallsWithMode(deps.db, session.accountId, {
      limit: pageSize,
      ...(status ? { status } : {}),
      ...(agentId ? { agentId } : {}),
      ...(startingAfter ? { startingAfter } : {}),
    });
    const calls = page?.data ?? [];
    const last = calls.at(-1);
    return sendPage(
      reply,
      200,
      callsPage({
        user: frameUser(session),
        calls,
        agents: await listAgents(deps.db, session.accountId),
        status,
        agentId,
        paged: startingAfter !== undefined,
        olderUrl: page?.has_more && last ? callsUrl({ ...filters, startingAfter: last.id }) : undefined,
        newestUrl: callsUrl(filters),
      }),
    );
  });

  app.get('/calls/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const session = sessionOf(request);
    const data = await loadCallPage(deps.db, session.accountId, request.params.id);
    if (!data) return sendNotFound(request, reply);
    return sendPage(reply, 200, callPage({ user: frameUser(session), ...data }));
  });
};
