import type { Kysely } from 'kysely';

/*
 * Retention of webhook events (src/features/webhook-delivery/event-retention.job.ts) finds old events by their
 * creation time in batches; without this index each batch would scan the whole table.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('webhook_events_created_idx').on('webhook_events').columns(['created_at', 'id']).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_events_created_idx').ifExists().execute();
}
