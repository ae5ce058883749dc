/** The shapes of the agents API (GET /v1/agents, /v1/agents/{id}). Response types come from these schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { pathIdMaxLength } from '../../lib/ids.js';
import { agentProviders, type AgentProvider } from '../providers/provider-catalogue.js';

/**
 * An agent as an API key sees it: what a client needs to pick one (a CRM's or an automation's dropdown), and
 * nothing of the provider's credentials or the agent's phone number.
 */
export const Agent = Type.Object({
  id: Type.String({ description: "The agent's id in callgate (agent_…): the agent_id of POST /v1/calls and /v1/batches" }),
  name: Type.String(),
  provider: Type.Unsafe<AgentProvider>({ type: 'string', enum: [...agentProviders], description: 'The voice provider that runs it' }),
  provider_agent_id: Type.String({
    description:
      'The id the provider knows the agent by: a Retell agent id, a Vapi assistant id; for ElevenLabs and the simulator, the same as id',
  }),
  created_at: Type.String({ description: 'When it was added to the account' }),
});
export type Agent = Static<typeof Agent>;

export const AgentParams = Type.Object({ id: Type.String({ maxLength: pathIdMaxLength }) });

export const ListAgentsQuery = Type.Object(
  {
    limit: ListLimitQuery,
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'An agent id (agent_…): the page starts after it' })),
  },
  { additionalProperties: false },
);
export type ListAgentsQuery = Static<typeof ListAgentsQuery>;

export const AgentList = Type.Object({ data: Type.Array(Agent), has_more: Type.Boolean() });
export type AgentList = Static<typeof AgentList>;
