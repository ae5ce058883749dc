import { sql, type Kysely } from 'kysely';

/*
 * The portal overview's charts (calls by outcome, webhook deliveries, latency of POST /v1/calls over the last
 * 24 hours and 30 days):
 * - `request_latency_hourly`, owned by the request log: per account, mode and UTC hour, how many answers of
 *   POST /v1/calls fell in each latency bucket (request-log-latency.ts). The request log itself is kept for
 *   CALLGATE_REQUEST_LOG_DAYS (7 by default), too short for 30 days of percentiles; these rows are a few
 *   dozen an hour per account and are kept 40 days.
 * - Deliveries keep their event's mode (null for `webhook.test`), filled here from the events: counting an
 *   account's deliveries of one mode through a join read every event of the mode (a sequential scan of
 *   webhook_events on PostgreSQL with a million of them).
 * - Two covering indexes, so that the charts' GROUP BY reads one index range of the account's last 30 days in
 *   one mode and never the rows themselves: calls with their outcome, deliveries with their state.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('request_latency_hourly')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    /** The UTC hour, `2026-11-24T09` (the first 13 characters of an ISO timestamp, so text order is time order). */
    .addColumn('hour', 'text', (c) => c.notNull())
    .addColumn('bucket', 'integer', (c) => c.notNull())
    .addColumn('count', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('request_latency_hourly_pk', ['account_id', 'mode', 'hour', 'bucket'])
    .execute();
  await db.schema.createIndex('request_latency_hourly_hour_idx').on('request_latency_hourly').column('hour').execute();
  await db.schema
    .createIndex('calls_account_mode_created_outcome_idx')
    .on('calls')
    .columns(['account_id', 'mode', 'created_at', 'status', 'failure_reason'])
    .execute();
  await db.schema.alterTable('webhook_deliveries').addColumn('mode', 'text').execute();
  await sql`update webhook_deliveries set mode = (select e.mode from webhook_events e where e.id = webhook_deliveries.event_id)`.execute(
    db,
  );
  await db.schema
    .createIndex('webhook_deliveries_account_mode_created_idx')
    .on('webhook_deliveries')
    .columns(['account_id', 'mode', 'created_at', 'status', 'attempt_count'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_account_mode_created_idx').execute();
  await db.schema.alterTable('webhook_deliveries').dropColumn('mode').execute();
  await db.schema.dropIndex('calls_account_mode_created_outcome_idx').execute();
  await db.schema.dropTable('request_latency_hourly').ifExists().execute();
}
