import type { Kysely } from 'kysely';

/*
 * The suppression list (src/features/suppressions): numbers an account must never call, checked before
 * every single call and every batch recipient's dial. One list per account, for both modes.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('suppressions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // A number is on an account's list once (a second POST answers the entry there), and the check before
  // each call is one lookup of this index.
  await db.schema.createIndex('suppressions_account_number_idx').on('suppressions').columns(['account_id', 'to_number']).unique().execute();
  // GET /v1/suppressions: newest first, and the cursor's place in that order.
  await db.schema
    .createIndex('suppressions_account_created_at_idx')
    .on('suppressions')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('suppressions').ifExists().execute();
}
