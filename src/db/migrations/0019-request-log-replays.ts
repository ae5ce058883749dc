import type { Kysely } from 'kysely';

/*
 * The request log says which answers were replays of an Idempotency-Key's stored answer (sent with
 * `Idempotent-Replayed: true`): the portal showed a replay exactly like the request that made the call.
 * 1 for a replay, else 0; rows written before are 0.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('request_logs')
    .addColumn('replayed', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('request_logs').dropColumn('replayed').execute();
}
