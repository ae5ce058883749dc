/** Overview, agents (with a sync per provider whose key the server has) and the request log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ApiError } from '../errors/api-error.js';
import { syncAgents } from '../features/agents/agents-sync.service.js';
import { listAgents } from '../features/agents/agents.service.js';
import { missingSetting, providerEntry, realProviders } from '../features/providers/provider-catalogue.js';
import { getRecentRequest, listRecentRequests } from '../features/request-log/request-log.service.js';
import { frameUser, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { AgentSyncForm, IdParams, OverviewQuery, RequestsQuery } from './portal.schemas.js';
import { chartPeriods, loadOverviewCharts } from './portal-charts.service.js';
import { modeFilters } from './views/batches.view.js';
import { loadOverview } from './portal.service.js';
import { agentsPage } from './views/agents.view.js';
import { overviewPage } from './views/overview.view.js';
import { requestPage, requestsPage } from './views/requests.view.js';

/** Requests on one page of the request log; older ones are a link away. */
const requestLogPageSize = 100;

export const portalPagesRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/', { schema: { querystring: OverviewQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const overview = await loadOverview(deps.db, deps.clock, session.accountId);
    // Without a mode in the address, the charts show the mode of the account's latest call (test for an
    // account without any): what the person has been doing. A value that names no period or mode is ignored.
    const mode = modeFilters.find((candidate) => candidate === request.query.mode) ?? overview.recentCalls[0]?.mode ?? 'test';
    const period = chartPeriods.find((candidate) => candidate === request.query.period) ?? '24h';
    const charts = await loadOverviewCharts(deps.db, deps.clock, session.accountId, { period, mode });
    // The quick start's agent is one this server can call with: an agent of a provider it has no key for
    // would answer a live key's pasted command with 503.
    const usable = (agent: (typeof overview.agents)[number]) => missingSetting(agent.provider, deps.config) === undefined;
    const agents = [...overview.agents.filter(usable), ...overview.agents.filter((agent) => !usable(agent))];
    return sendPage(reply, 200, overviewPage({ user: frameUser(session), baseUrl: deps.config.publicUrl, ...overview, agents, charts }));
  });

  const syncable = [...deps.agentDirectories.keys()];

  app.get('/agents', async (request, reply) => {
    const session = sessionOf(request);
    return sendPage(reply, 200, agentsPage(frameUser(session), await listAgents(deps.db, session.accountId), { syncable }));
  });

  // The same sync as `callgate agents sync`, for the account of the signed-in user (the CSRF check of every
  // portal POST applies). Rendered, not redirected: the counts are in this answer only.
  app.post('/agents/sync', { schema: { body: AgentSyncForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const page = async (status: number, outcome: { notice?: string; error?: string }) =>
      sendPage(reply, status, agentsPage(frameUser(session), await listAgents(deps.db, session.accountId), { syncable, ...outcome }));
    const provider = realProviders.find((candidate) => candidate === request.body.provider.trim());
    if (!provider) return page(400, { error: `There is no provider "${request.body.provider.slice(0, 40)}" to sync with.` });
    const { label, settings } = providerEntry(provider);
    const directory = deps.agentDirectories.get(provider);
    if (!directory) {
      return page(409, {
        error: `This server has no ${settings.apiKey}, so it cannot sync agents from ${label}. Ask your callgate operator to set it.`,
      });
    }
    try {
      const result = await syncAgents(deps.db, deps.clock, directory, session.accountId);
      const skipped =
        result.skipped.length > 0
          ? ` Skipped (ids that do not look like agent_…): ${result.skipped.map((entry) => entry.agent_id).join(', ')}.`
          : '';
      return page(200, { notice: `Synced with ${label}: ${result.added} added, ${result.updated} updated.${skipped}` });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return page(502, {
        error: `The sync with ${label} failed: ${error.message.replace(/\.$/, '')}. Nothing was changed. If it keeps failing, show this message to your callgate operator.`,
      });
    }
  });

  app.get('/requests', { schema: { querystring: RequestsQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const search = request.query.request_id?.trim().slice(0, 100) || undefined;
    const before = request.query.before?.trim().slice(0, 100) || undefined;
    // A NUL byte names no request (and PostgreSQL refuses it in a query).
    const page =
      search?.includes('\u0000') || before?.includes('\u0000')
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

  app.get('/requests/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const session = sessionOf(request);
    const row = await getRecentRequest(deps.db, deps.clock, session.accountId, request.params.id);
    if (!row) return sendNotFound(request, reply);
    return sendPage(reply, 200, requestPage(frameUser(session), row));
  });
};
