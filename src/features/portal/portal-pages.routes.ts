/** Overview, agents and the request log: read-only pages. */
import type { FastifyPluginAsync } from 'fastify';
import { listAgents } from '../agents/agents.service.js';
import { listRecentRequests } from '../request-log/request-log.service.js';
import { frameUser, queryValue, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { loadOverview } from './portal.service.js';
import { agentsPage } from './views/agents.view.js';
import { overviewPage } from './views/overview.view.js';
import { requestsPage } from './views/requests.view.js';

/** Requests on one page of the request log; older ones are a link away. */
const requestLogPageSize = 100;

export const portalPagesRoutes: FastifyPluginAsync<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/', async (request, reply) => {
    const session = sessionOf(request);
    const overview = await loadOverview(deps.db, session.accountId);
    // The quick start's agent is one this server can call with: an ElevenLabs agent without ELEVENLABS_API_KEY
    // would answer a live key's pasted command with 503.
    const usable = (agent: (typeof overview.agents)[number]) => agent.provider !== 'elevenlabs' || Boolean(deps.config.elevenlabs.apiKey);
    const agents = [...overview.agents.filter(usable), ...overview.agents.filter((agent) => !usable(agent))];
    return sendPage(reply, 200, overviewPage({ user: frameUser(session), baseUrl: deps.config.publicUrl, ...overview, agents }));
  });

  app.get('/agents', async (request, reply) => {
    const session = sessionOf(request);
    return sendPage(reply, 200, agentsPage(frameUser(session), await listAgents(deps.db, session.accountId)));
  });

  app.get('/requests', async (request, reply) => {
    const session = sessionOf(request);
    const search = queryValue(request, 'request_id')?.trim().slice(0, 100) || undefined;
    const before = queryValue(request, 'before')?.trim().slice(0, 100) || undefined;
    // A NUL byte names no request (and PostgreSQL refuses it in a query).
    const page = search?.includes('\u0000') || before?.includes('\u0000')
      ? { rows: [], hasMore: false }
      : await listRecentRequests(deps.db, deps.clock, session.accountId, {
          limit: requestLogPageSize,
          ...(search ? { requestId: search } : {}),
          ...(before && !search ? { before } : {}),
        });
    const last = page.rows.at(-1);
    return sendPage(
      reply,
      200,
      requestsPage(frameUser(session), page.rows, search, {
        paged: Boolean(before && !search),
        olderUrl: page.hasMore && last ? `/developers/requests?before=${encodeURIComponent(last.id)}` : undefined,
      }),
    );
  });
};
