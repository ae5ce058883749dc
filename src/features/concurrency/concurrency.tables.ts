/**
 * The slots of the account concurrency limit (concurrency.service.ts), as Kysely sees them. The limit itself
 * is the account's `max_concurrent_calls` (identity.tables.ts).
 */
import type { Selectable } from 'kysely';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';

/**
 * A slot held for a call being placed, from before the provider is asked until the call is stored (a
 * stored call that has not ended holds its slot by itself). Its id is its holder's: a batch recipient's
 * (`rcp_…`) or a fresh `slot_…` for a POST /v1/calls.
 */
export interface CallSlotsTable {
  id: string;
  account_id: string;
  /** Live and test calls count apart: a simulated call never takes a live call's slot. */
  mode: ApiKeyMode;
  /** The holder's lease: past it the slot is free again (its holder died between claim and store). */
  expires_at: string;
  created_at: string;
}

export interface ConcurrencyTables {
  call_slots: CallSlotsTable;
}

export type CallSlotRow = Selectable<CallSlotsTable>;
