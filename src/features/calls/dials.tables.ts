import type { Selectable } from 'kysely';
import type { AgentProvider } from '../agents/agents.tables.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

/**
 * Where a dial stands:
 * - `asking`: recorded, the provider is being asked (a dial left here past `due_at` lost its asker);
 * - `placed`: the provider answered with the call; `refused`: it answered that it placed none;
 * - `checking`: its answer was lost; it is looked up at the provider until known;
 * - `found`: looked up and found (its call is stored); `not_placed`: not found within the search window;
 * - `abandoned`: the provider could not be asked within the Idempotency-Key's lifetime (24 hours).
 */
export type DialState = 'asking' | 'placed' | 'refused' | 'checking' | 'found' | 'not_placed' | 'abandoned';

export const openDialStates = ['asking', 'checking'] as const satisfies readonly DialState[];

/** One step of a dial's history, as the portal's call page shows it. */
export interface DialStep {
  readonly at: string;
  readonly step: string;
}

export interface DialsTable {
  id: string;
  account_id: string;
  api_key_id: string;
  mode: ApiKeyMode;
  provider: AgentProvider;
  agent_ref: string;
  /** callgate's agent id (the API's `agent_id`). */
  agent_id: string;
  /** The provider's id of the agent, as sent in the create request. */
  provider_agent_id: string;
  phone_number_id: string | null;
  to_number: string;
  metadata: string | null;
  batch_id: string | null;
  recipient_id: string | null;
  reference: string | null;
  idempotency_route: string | null;
  idempotency_key: string | null;
  idempotency_owner: string | null;
  state: DialState;
  call_id: string | null;
  asked_at: string;
  due_at: string;
  search_until: string;
  looks: number;
  /** JSON: DialStep[]. */
  history: string;
  created_at: string;
  updated_at: string;
}

/** A provider's report of how a call ended, kept until the call it names is stored. */
export interface HeldOutcomesTable {
  provider: AgentProvider;
  conversation_id: string;
  dial_id: string | null;
  /** JSON of the CallOutcome (dates as ISO text). */
  outcome: string;
  received_at: string;
}

export interface DialsTables {
  dials: DialsTable;
  held_outcomes: HeldOutcomesTable;
}

export type DialRow = Selectable<DialsTable>;
export type HeldOutcomeRow = Selectable<HeldOutcomesTable>;
