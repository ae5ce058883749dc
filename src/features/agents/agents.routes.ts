/**
 * GET /v1/agents and GET /v1/agents/{id}: the account's agents, for a client that fills a list to choose one
 * from. Agents have no mode: a test key and a live key of an account see the same agents.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { errorResponses } from '../../errors/error-schemas.js';
import type { Db } from '../../db/database.js';
import { parseListLimit } from '../../http/list-limit.js';
import { requireApiKey } from '../../http/api-auth.plugin.js';
import { Agent, AgentList, AgentParams, ListAgentsQuery } from './agents.schemas.js';
import { listAgentsPage, retrieveAgent } from './agents.service.js';

export interface AgentsRoutesDeps {
  readonly db: Db;
}

export const agentsRoutes: FastifyPluginAsyncTypebox<{ deps: AgentsRoutesDeps }> = async (app, { deps }) => {
  const listSchema = {
    operationId: 'listAgents',
    tags: ['Agents'],
    summary: 'List agents',
    description:
      "The account's agents (whatever the key's mode), newest first, a page at a time: pass the last id as starting_after for the next page.",
    querystring: ListAgentsQuery,
    response: { 200: AgentList, ...errorResponses([]) },
  };
  app.get('/agents', { schema: listSchema }, async (request) => {
    const { starting_after: startingAfter } = request.query;
    return listAgentsPage(deps.db, requireApiKey(request).account_id, {
      limit: parseListLimit(request.query.limit),
      ...(startingAfter === undefined ? {} : { startingAfter }),
    });
  });
  registerMethodNotAllowed(app, '/agents', ['GET']);

  const retrieveSchema = {
    operationId: 'retrieveAgent',
    tags: ['Agents'],
    summary: 'Retrieve an agent',
    description: 'One agent of the account, by its id (agent_…).',
    params: AgentParams,
    response: { 200: Agent, ...errorResponses(['not_found']) },
  };
  app.get('/agents/:id', { schema: retrieveSchema }, async (request) =>
    retrieveAgent(deps.db, requireApiKey(request).account_id, request.params.id),
  );
  registerMethodNotAllowed(app, '/agents/:id', ['GET']);
};
