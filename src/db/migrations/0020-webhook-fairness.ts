import { sql, type Kysely } from 'kysely';

/*
 * Fair webhook delivery (src/features/webhook-delivery):
 * - An index of the pending deliveries (only those: ended ones, the most by far, stay out of it) by endpoint
 *   in due order: the claim walks the endpoints with pending deliveries (one seek each) and takes each one's
 *   first due deliveries, whatever the backlog of any one endpoint or the history of all. It replaces the
 *   index by (status, next_attempt_at), which the claim no longer reads: SQLite's planner took it for the
 *   walk of endpoints (an equality on its first column) and sorted every pending delivery on each claim.
 * - An index of the claimed deliveries (a lease set) by endpoint: the claim counts each endpoint's attempts in
 *   flight, across every worker, from the few rows under a lease.
 * - `webhook_endpoint_backoffs`, owned by webhook-delivery: an endpoint's run of attempts that got no answer
 *   (timeouts, connection failures). From a run of 5 its deliveries wait for a probe at `next_try_at`; the row
 *   goes once a probe is answered.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_pending_idx')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'next_attempt_at', 'id'])
    .where(sql.ref('status'), '=', sql.lit('pending'))
    .execute();
  await db.schema.dropIndex('webhook_deliveries_due_idx').execute();
  await db.schema
    .createIndex('webhook_deliveries_claimed_idx')
    .on('webhook_deliveries')
    .columns(['endpoint_id', 'locked_until'])
    .where(sql.ref('locked_until'), 'is not', null)
    .execute();
  await db.schema
    .createTable('webhook_endpoint_backoffs')
    .addColumn('endpoint_id', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('probes', 'integer', (c) => c.notNull())
    .addColumn('next_try_at', 'text')
    .addColumn('since', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_endpoint_backoffs').ifExists().execute();
  await db.schema.dropIndex('webhook_deliveries_claimed_idx').ifExists().execute();
  await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.dropIndex('webhook_deliveries_pending_idx').ifExists().execute();
}
