import { sql, type Kysely } from 'kysely';

/*
 * Dials (src/features/calls/dials.*): every request to a provider to place a call is recorded before it is
 * sent, with an id of callgate's own that travels with it. A dial whose answer is lost (no answer in time, a
 * 5xx, a dropped connection, a crash) is looked up at the provider by that id until it is known whether a
 * call was placed; the Idempotency-Key (or the batch recipient) that asked stays held until then.
 *
 * `held_outcomes` keeps a provider's report of a call that is not stored yet (the post-call webhook of a call
 * whose create answer was lost) until the call is, instead of dropping it.
 *
 * Calls learn the dial that placed them (`dial_id`) and whether it was found after a lost answer.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dials')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('api_key_id', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('agent_ref', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('provider_agent_id', 'text', (c) => c.notNull())
    .addColumn('phone_number_id', 'text')
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text')
    .addColumn('batch_id', 'text')
    .addColumn('recipient_id', 'text')
    .addColumn('reference', 'text')
    // The Idempotency-Key that asked (its API key is api_key_id), with the owner of its hold.
    .addColumn('idempotency_route', 'text')
    .addColumn('idempotency_key', 'text')
    .addColumn('idempotency_owner', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text')
    .addColumn('asked_at', 'text', (c) => c.notNull())
    // asking: when its asker is taken for dead; checking: when the next look is due (a claim moves it on).
    .addColumn('due_at', 'text', (c) => c.notNull())
    .addColumn('search_until', 'text', (c) => c.notNull())
    .addColumn('looks', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('history', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The dials still open, by when they are due: the job's claim reads only these.
  await db.schema
    .createIndex('dials_open_idx')
    .on('dials')
    .columns(['due_at'])
    .where(sql.ref('state'), 'in', ['asking', 'checking'])
    .execute();
  await db.schema.createIndex('dials_recipient_idx').on('dials').columns(['recipient_id']).execute();

  await db.schema
    .createTable('held_outcomes')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('conversation_id', 'text', (c) => c.notNull())
    .addColumn('dial_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('received_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('held_outcomes_pk', ['provider', 'conversation_id'])
    .execute();
  await db.schema.createIndex('held_outcomes_dial_idx').on('held_outcomes').columns(['dial_id']).execute();

  await db.schema.alterTable('calls').addColumn('dial_id', 'text').execute();
  await db.schema
    .alterTable('calls')
    .addColumn('found_after_lost_answer', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('calls').dropColumn('found_after_lost_answer').execute();
  await db.schema.alterTable('calls').dropColumn('dial_id').execute();
  await db.schema.dropTable('held_outcomes').execute();
  await db.schema.dropTable('dials').execute();
}
