import type { Kysely } from 'kysely';

/*
 * Indexes found missing by the growth benchmark of npm run bench (then bench/growth-bench.ts: every hot path's plan at 1,000,000
 * calls). Listing an account's calls of one status (the portal's filter, GET /v1/calls?status=) walked all
 * of the account's calls newest first through (account_id, created_at, id), testing each one's status: a
 * rare status (calls in progress) read every call the account ever made to fill a page.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('calls_account_status_created_idx')
    .on('calls')
    .columns(['account_id', 'status', 'created_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('calls_account_status_created_idx').ifExists().execute();
}
