import type { Kysely } from 'kysely';

/*
 * Agents of Retell and Vapi: callgate's `agent_id` stays `agent_…` (spec 2.1), and the provider's own id of
 * the agent (a Retell agent id, a Vapi assistant id) is kept beside it. Null for ElevenLabs and simulator
 * agents, whose `agent_id` is the provider's id.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').addColumn('provider_agent_id', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('agents').dropColumn('provider_agent_id').execute();
}
