import type { Kysely } from 'kysely';

/*
 * Sessions of the developer portal, kept server-side. The id is the SHA-256 of the random token in the
 * cookie, so a copy of this table signs nobody in. Each session carries its own CSRF token.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('portal_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('csrf_token', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('portal_sessions_user_idx').on('portal_sessions').column('user_id').execute();
  await db.schema.createIndex('portal_sessions_expires_idx').on('portal_sessions').column('expires_at').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('portal_sessions').ifExists().execute();
}
