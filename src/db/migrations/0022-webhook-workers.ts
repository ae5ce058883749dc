import type { Kysely } from 'kysely';

/*
 * `webhook_workers`, owned by webhook-delivery: one row per running webhook dispatcher (one per worker
 * process), which it renews while its passes run. The claim splits each endpoint's slots
 * (CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY) between the dispatchers whose row is live, so that the worker
 * whose attempts just ended cannot take every freed slot before the others look.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_workers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('live_until', 'text', (c) => c.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_workers').ifExists().execute();
}
