/** Deletes finished webhook events with their deliveries and attempts (event-retention.job.ts). */
import type { Db } from '../../db/database.js';

/**
 * Deletes at most `limit` events created before `before` none of whose deliveries is pending, with their
 * deliveries and those deliveries' attempts, in one short transaction; returns how many events went.
 * Every delete re-checks that no delivery is pending, so a delivery made pending meanwhile (a resend)
 * keeps its event and is never deleted.
 */
export async function purgeFinishedEvents(db: Db, before: string, limit: number): Promise<number> {
  const ids = (
    await db
      .selectFrom('webhook_events as e')
      .select('e.id')
      .where('e.created_at', '<', before)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'e.id').where('d.status', '=', 'pending'),
          ),
        ),
      )
      .orderBy('e.created_at')
      .limit(limit)
      .execute()
  ).map((row) => row.id);
  if (ids.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom('webhook_attempts')
      .where('delivery_id', 'in', (eb) =>
        eb.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', ids).where('status', '<>', 'pending'),
      )
      .execute();
    await trx.deleteFrom('webhook_deliveries').where('event_id', 'in', ids).where('status', '<>', 'pending').execute();
    const result = await trx
      .deleteFrom('webhook_events')
      .where('id', 'in', ids)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'webhook_events.id'))),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  });
}
