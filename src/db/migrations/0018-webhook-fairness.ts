import { sql, type Kysely } from 'kysely';

/*
 * Fair webhook delivery (src/features/webhook-delivery):
 * - An index of the pending deliveries by endpoint in due order: the claim walks the endpoints with pending
 *   deliveries (one seek each) and takes each one's first due deliveries, whatever the backlog of any one
 *   endpoint.
 * - An index of the claimed deliveries (a lease set) by endpoint: the claim counts each endpoint's attempts in
 *   flight, across every worker, from the few rows under a lease.
 * - `webhook_endpoint_backoffs`, owned by webhook-delivery: an endpoint's run of attempts that got no answer
 *   (timeouts, connection failures). From a run of 5 its deliveries wait for a probe at `next_try_at`; the row
 *   goes once a probe is answered.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_endpoint_due_idx')
    .on('webhook_deliveries')
    .columns(['status', 'endpoint_id', 'next_attempt_at', 'id'])
    .execute();
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
  await db.schema.dropIndex('webhook_deliveries_endpoint_due_idx').ifExists().execute();
}
