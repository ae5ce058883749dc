import type { Kysely } from 'kysely';

/*
 * The events API (GET /v1/events): an API key reads its account's events in its own mode only, as it reads
 * calls, so each event now records the mode of what caused it (a call's, a batch's). `webhook.test` events
 * test an endpoint rather than report anything and have none (null): the API does not list them.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_events').addColumn('mode', 'text').execute();
  // Events written before: a call's event takes its call's mode, a batch's its batch's (data.id).
  await db
    .updateTable('webhook_events')
    .set((eb) => ({ mode: eb.selectFrom('calls').select('calls.mode').whereRef('calls.id', '=', 'webhook_events.call_id') }))
    .where('call_id', 'is not', null)
    .execute();
  const batchEvents = await db.selectFrom('webhook_events').select(['id', 'payload']).where('type', '=', 'batch.completed').execute();
  for (const event of batchEvents as { id: string; payload: string }[]) {
    const batchId = (JSON.parse(event.payload) as { data?: { id?: unknown } }).data?.id;
    if (typeof batchId !== 'string') continue;
    await db
      .updateTable('webhook_events')
      .set((eb) => ({ mode: eb.selectFrom('batches').select('batches.mode').where('batches.id', '=', batchId) }))
      .where('id', '=', event.id)
      .execute();
  }
  // GET /v1/events newest first within an account's mode, with and without a type, and the cursor's place.
  await db.schema
    .createIndex('webhook_events_account_mode_created_idx')
    .on('webhook_events')
    .columns(['account_id', 'mode', 'created_at', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_events_account_mode_type_created_idx')
    .on('webhook_events')
    .columns(['account_id', 'mode', 'type', 'created_at', 'id'])
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('webhook_events_account_mode_type_created_idx').execute();
  await db.schema.dropIndex('webhook_events_account_mode_created_idx').execute();
  await db.schema.alterTable('webhook_events').dropColumn('mode').execute();
}
