/**
 * The suppression list, as Kysely sees it (composed into the one `Database` by db/schema.ts): numbers an
 * account must never call. One list per account, without a mode: it guards real people, so an entry made
 * with a test-mode key holds for live calls too, and the other way round.
 */
import type { Selectable } from 'kysely';

export interface SuppressionsTable {
  /** `sup_…`: the cursor of GET /v1/suppressions. */
  id: string;
  account_id: string;
  /** E.164, as POST /v1/calls takes `to`; at most once per account. */
  to_number: string;
  reason: string | null;
  created_at: string;
}

export interface SuppressionsTables {
  suppressions: SuppressionsTable;
}

export type SuppressionRow = Selectable<SuppressionsTable>;
