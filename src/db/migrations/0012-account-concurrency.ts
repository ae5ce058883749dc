import { sql, type Kysely } from 'kysely';

/*
 * An account's limit of calls in progress at once (src/features/concurrency): `max_concurrent_calls` on the
 * account (null: no limit, as before), and the slots held for calls being placed. A slot is held from before
 * the provider is asked until the call is stored; from then on the call itself (`initiated`) holds it until
 * its outcome. A slot whose holder died ends with its lease (`expires_at`).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('max_concurrent_calls', 'integer').execute();
  await db.schema
    .createTable('call_slots')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('call_slots_account_idx').on('call_slots').columns(['account_id', 'mode', 'expires_at']).execute();
  // The count of an account's calls in progress, under its lock: only the few open calls are in this index,
  // however many ended ones the account has.
  await db.schema
    .createIndex('calls_in_progress_idx')
    .on('calls')
    .columns(['account_id', 'mode'])
    .where(sql.ref('status'), '=', 'initiated')
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('calls_in_progress_idx').execute();
  await db.schema.dropTable('call_slots').execute();
  await db.schema.alterTable('accounts').dropColumn('max_concurrent_calls').execute();
}
