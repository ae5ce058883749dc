import { sql, type Kysely } from 'kysely';

/*
 * Batches' calling windows and retries (src/features/batches): each batch keeps the two settings as JSON,
 * each recipient the zones its window is checked in, its number of dials and every call placed for it.
 * A recipient made before was dialed once when it has left the queue (cancelled ones never were).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('batches').addColumn('calling_window', 'text').execute();
  await db.schema.alterTable('batches').addColumn('retry', 'text').execute();
  await db.schema.alterTable('batch_recipients').addColumn('time_zones', 'text').execute();
  await db.schema
    .alterTable('batch_recipients')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('batch_recipients')
    .addColumn('call_ids', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db
    .updateTable('batch_recipients')
    .set({ attempts: 1 })
    .where('status', 'in', ['dialing', 'in_progress', 'completed', 'failed'])
    .execute();
  await db.updateTable('batch_recipients').set({ call_ids: sql`'["' || call_id || '"]'` }).where('call_id', 'is not', null).execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const column of ['call_ids', 'attempts', 'time_zones']) await db.schema.alterTable('batch_recipients').dropColumn(column).execute();
  for (const column of ['retry', 'calling_window']) await db.schema.alterTable('batches').dropColumn(column).execute();
}
