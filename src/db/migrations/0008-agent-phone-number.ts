import type { Kysely } from 'kysely';

/* The agent's phone number itself (E.164), beside the provider's id of it: people recognise the number. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').addColumn('phone_number', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').dropColumn('phone_number').execute();
}
