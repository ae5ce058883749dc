import type { Insertable, Selectable } from 'kysely';

export type AgentProvider = 'simulator' | 'elevenlabs';

export interface AgentsTable {
  id: string;
  account_id: string;
  /** The provider's agent id (`agent_…`), the `agent_id` of the public API. */
  agent_id: string;
  name: string;
  provider: AgentProvider;
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
