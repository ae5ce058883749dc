/**
 * Deletes finished webhook events with their deliveries and attempts (event-retention.job.ts). It is this
 * room's, above the events: whether an event is finished is a question about its deliveries, and they go
 * before it.
 */
import type { ListCursor } from '../../db/cursor.js';
import type { Db } from '../../db/database.js';
import { deleteEvents, listEventsCreatedBefore } from '../events/events.service.js';
import { deleteEndedDeliveriesOfEvents, eventsWithPendingDeliveries } from './delivery-queue.service.js';

/** Pages of old events looked through in one call, at most, for ones whose deliveries all ended. */
const pagesMax = 10;

/**
 * Deletes at most `limit` events created before `before` none of whose deliveries is pending, with their
 * deliveries and those deliveries' attempts, in one short transaction; returns how many events went. Old
 * events with a pending delivery are stepped over (a few pages at most), so they never hold back the
 * others. The deliveries are deleted first and the events that still have one kept: a delivery made
 * pending meanwhile (a resend) keeps its event and is never deleted.
 */
export async function purgeFinishedEvents(db: Db, before: string, limit: number): Promise<number> {
  const ids: string[] = [];
  let after: ListCursor | undefined;
  for (let page = 0; page < pagesMax && ids.length < limit; page++) {
    const events = await listEventsCreatedBefore(db, before, after, limit);
    if (events.length === 0) break;
    const pending = await eventsWithPendingDeliveries(
      db,
      events.map((event) => event.id),
    );
    ids.push(...events.filter((event) => !pending.has(event.id)).map((event) => event.id));
    const last = events[events.length - 1]!;
    after = { createdAt: last.created_at, id: last.id };
    if (events.length < limit) break;
  }
  const chosen = ids.slice(0, limit);
  if (chosen.length === 0) return 0;
  return db.transaction().execute(async (trx) => {
    const kept = await deleteEndedDeliveriesOfEvents(trx, chosen);
    return deleteEvents(
      trx,
      chosen.filter((id) => !kept.has(id)),
    );
  });
}
