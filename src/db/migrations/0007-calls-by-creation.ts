import type { Kysely } from 'kysely';

/*
 * Calls are listed newest first by (created_at, id). Ids used to stand in for time, which holds for the
 * simulator's time-sortable conversation ids but not for ElevenLabs' ids, whose order is not documented.
 * The new index serves the list and its cursor; the old (account_id, id) one served only the list.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('calls_account_created_at_idx').on('calls').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema.dropIndex('calls_account_created_idx').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('calls_account_created_idx').on('calls').columns(['account_id', 'id']).execute();
  await db.schema.dropIndex('calls_account_created_at_idx').execute();
}
