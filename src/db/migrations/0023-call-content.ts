import type { Kysely } from 'kysely';

/*
 * What a provider kept of a call besides how it ended (src/features/calls/call-content.*).
 *
 * `calls` gains the provider's judgement (`analysis_successful`: 1, 0 or null) and the structured results its
 * agent collected (`analysis_data`, JSON; '{}' when none, null once the retention purge deleted them).
 *
 * `call_content` holds, per ended call, its transcript turns (JSON; null when the provider kept none) and
 * where its recording is (JSON; never shown). The row lives until CALLGATE_TRANSCRIPT_RETENTION has passed
 * since `stored_at`: the purge deletes it (and the call's analysis data) then, and a recording without its
 * row is no longer served.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('calls').addColumn('analysis_successful', 'integer').execute();
  await db.schema.alterTable('calls').addColumn('analysis_data', 'text').execute();
  await db.schema
    .createTable('call_content')
    .addColumn('call_id', 'text', (c) => c.primaryKey())
    .addColumn('stored_at', 'text', (c) => c.notNull())
    .addColumn('turns', 'text')
    .addColumn('recording', 'text')
    .execute();
  // The purge reads the oldest rows first.
  await db.schema.createIndex('call_content_stored_idx').on('call_content').columns(['stored_at']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('call_content').ifExists().execute();
  await db.schema.alterTable('calls').dropColumn('analysis_data').execute();
  await db.schema.alterTable('calls').dropColumn('analysis_successful').execute();
}
