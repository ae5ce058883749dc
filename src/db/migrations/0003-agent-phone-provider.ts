import type { Kysely } from 'kysely';

/* Which ElevenLabs endpoint places an agent's calls depends on its phone number's kind (twilio or sip_trunk). */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').addColumn('phone_number_provider', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').dropColumn('phone_number_provider').execute();
}
