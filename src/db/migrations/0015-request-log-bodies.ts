import type { Kysely } from 'kysely';

/*
 * The request log keeps each request's body and its response's body (at most 16 KB each, cut at a UTF-8
 * boundary with a marker, secrets removed), so the portal's request page shows what was sent and answered.
 * Rows written before have neither (null).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('request_logs').addColumn('request_body', 'text').execute();
  await db.schema.alterTable('request_logs').addColumn('response_body', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('request_logs').dropColumn('response_body').execute();
  await db.schema.alterTable('request_logs').dropColumn('request_body').execute();
}
