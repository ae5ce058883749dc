import type { Insertable, Selectable } from 'kysely';

import type { AgentProvider } from '../providers/provider-catalogue.js';

export type { AgentProvider };

export interface AgentsTable {
  id: string;
  account_id: string;
  /** callgate's agent id (`agent_…`), the `agent_id` of the public API; ElevenLabs' own agent id for theirs. */
  agent_id: string;
  name: string;
  provider: AgentProvider;
  /** The provider's own id of the agent when it is not `agent_id`: a Retell agent id, a Vapi assistant id. */
  provider_agent_id: string | null;
  /** The provider's id of the number calls come from (Retell: the E.164 number itself). */
  phone_number_id: string | null;
  /** The kind of that number at the provider (ElevenLabs: `twilio` or `sip_trunk`), when known. */
  phone_number_provider: string | null;
  /** That number itself (E.164), when the provider said (agents sync); null when set by hand. */
  phone_number: string | null;
  created_at: string;
}

export interface AgentsTables {
  agents: AgentsTable;
}

export type AgentRow = Selectable<AgentsTable>;
export type NewAgentRow = Insertable<AgentsTable>;
