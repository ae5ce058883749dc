import type { Kysely } from 'kysely';

/*
 * One-time tokens of the portal's key-creation form. A form sent again (a reload of the answer, a double
 * click, the back button) carries a token already used: it is refused instead of making a second key. The
 * primary key makes the claim atomic when two copies of the form arrive at once.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('portal_form_tokens')
    .addColumn('token', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('api_key_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_form_tokens_created_idx').on('portal_form_tokens').column('created_at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('portal_form_tokens').ifExists().execute();
}
