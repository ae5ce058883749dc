/**
 * An account's deliveries as people read them: the portal's pages and `callgate deliveries
 * list`. Every read is scoped to the account: another account's delivery is as absent as an unknown one.
 */
import type { Db } from '../../db/database.js';
import { isoTimestamp } from '../../lib/clock.js';
import { slotLength, type SlotUnit } from '../../lib/time-slots.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import { eventSummaries } from '../events/event-reads.service.js';
import { endpointsByIds } from '../webhook-endpoints/endpoints.service.js';
import type { WebhookAttemptRow, WebhookDeliveryRow } from './deliveries.tables.js';
import * as repo from './deliveries.repository.js';
import * as dispatcherRepo from './dispatcher.repository.js';

export type DeliveryFilter = repo.DeliveryFilter;
/** A delivery with its event's type and call and its endpoint's URL, for a list. */
export type DeliveryListItem = Awaited<ReturnType<typeof repo.listDeliveries>>[number] & {
  readonly event_type: string;
  readonly call_id: string | null;
  readonly endpoint_url: string;
  readonly endpoint_description: string;
  readonly endpoint_deleted_at: string | null;
};
export type DeliveryWithAttempts = DeliveryListItem & { attempts: WebhookAttemptRow[] };

/** The account's deliveries that match, newest first, each with what a list shows of its event and endpoint. */
export async function listDeliveries(db: Db, filter: DeliveryFilter): Promise<DeliveryListItem[]> {
  const deliveries = await repo.listDeliveries(db, filter);
  if (deliveries.length === 0) return [];
  const events = await eventSummaries(
    db,
    deliveries.map((delivery) => delivery.event_id),
  );
  const endpoints = await endpointsByIds(
    db,
    deliveries.map((delivery) => delivery.endpoint_id),
  );
  return deliveries.map((delivery) => {
    const event = events.get(delivery.event_id)!;
    const endpoint = endpoints.get(delivery.endpoint_id)!;
    return {
      ...delivery,
      event_type: event.type,
      call_id: event.call_id,
      endpoint_url: endpoint.url,
      endpoint_description: endpoint.description,
      endpoint_deleted_at: endpoint.deleted_at,
    };
  });
}

/** `listDeliveries`, each with every attempt in order. */
export async function listDeliveriesWithAttempts(db: Db, filter: DeliveryFilter): Promise<DeliveryWithAttempts[]> {
  const deliveries = await listDeliveries(db, filter);
  const attempts = await repo.listAttemptsOfDeliveries(
    db,
    deliveries.map((delivery) => delivery.id),
  );
  return deliveries.map((delivery) => ({ ...delivery, attempts: attempts.filter((attempt) => attempt.delivery_id === delivery.id) }));
}

export async function findDelivery(db: Db, accountId: string, id: string): Promise<WebhookDeliveryRow | undefined> {
  return repo.findDeliveryInAccount(db, accountId, id);
}

/** Deliveries waiting to be sent in the whole database, and the next-attempt time of the oldest due (the metrics). */
export function deliveryBacklog(db: Db, now: string): Promise<{ pending: number; oldestDueAt: string | null }> {
  return dispatcherRepo.deliveryBacklog(db, now);
}

/** The dispatchers live at `now`, which share each endpoint's slots (the metrics, at scrape time). */
export function liveDispatchers(db: Db, now: string): Promise<number> {
  return dispatcherRepo.countLiveWorkers(db, now);
}

export type DeliveryStateCount = repo.DeliveryStateCount;

/** The account's deliveries of `mode`'s events since `since`, per UTC hour or day, status and attempts (the portal's charts). */
export async function countDeliveryStates(
  db: Db,
  accountId: string,
  mode: ApiKeyMode,
  since: Date,
  unit: SlotUnit,
): Promise<DeliveryStateCount[]> {
  return repo.countDeliveryStates(db, { accountId, mode, since: isoTimestamp(since), slotLength: slotLength[unit] });
}

/** A failing endpoint's deliveries waiting for a probe: since when its attempts got no answer, and the next try. */
export interface EndpointBackoff {
  readonly failing_since: string;
  readonly next_try_at: string;
  /** The next try's time has come: its probe is due or under way (a probe to a silent receiver takes its timeout). */
  readonly probe_due: boolean;
}

/** The endpoints among these whose deliveries wait for a probe (see endpoint-backoff.ts), by id, as of `now`. */
export async function endpointBackoffs(db: Db, endpointIds: readonly string[], now: Date): Promise<Map<string, EndpointBackoff>> {
  const rows = await dispatcherRepo.listBackoffs(db, endpointIds);
  return new Map(
    rows.flatMap((row) =>
      row.next_try_at === null
        ? []
        : [
            [
              row.endpoint_id,
              { failing_since: row.since, next_try_at: row.next_try_at, probe_due: Date.parse(row.next_try_at) <= now.getTime() },
            ] as const,
          ],
    ),
  );
}

/** How a backoff reads in the CLI and the portal. */
export function describeBackoff(backoff: EndpointBackoff): string {
  const due = backoff.probe_due ? ' (now: a probe is due or under way)' : '';
  return `failing since ${backoff.failing_since}, next try ${backoff.next_try_at}${due}`;
}
