/**
 * The deliveries as this room writes them beside the events and endpoints below it: the fan-out adds one
 * per event and endpoint in the transaction that writes the event (fan-out.service.ts), an endpoint
 * disabled or deleted ends its pending ones (endpoint-changes.service.ts), and retention deletes those of
 * old events (event-retention.service.ts). Pass the caller's transaction as `db`.
 */
import type { Db } from '../../db/database.js';
import { isoTimestamp } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { DeliveryTrigger } from './deliveries.tables.js';
import * as repo from './deliveries.repository.js';
import * as dispatcherRepo from './dispatcher.repository.js';

/** The deliveries of one event: of its account, in its mode (the overview counts them by it), one per endpoint. */
export interface EventDeliveries {
  readonly eventId: string;
  readonly accountId: string;
  readonly mode: ApiKeyMode | null;
  readonly endpointIds: readonly string[];
  readonly trigger: DeliveryTrigger;
}

/**
 * Writes the deliveries of several events in one statement (per 500 rows), each due now; returns their
 * ids, per event in the order given.
 */
export async function addDeliveries(db: Db, now: Date, events: readonly EventDeliveries[]): Promise<string[][]> {
  const at = isoTimestamp(now);
  const rows = events.map((event) =>
    event.endpointIds.map((endpointId) => ({
      id: newId('delivery', now.getTime()),
      event_id: event.eventId,
      endpoint_id: endpointId,
      account_id: event.accountId,
      mode: event.mode,
      status: 'pending' as const,
      trigger: event.trigger,
      attempt_count: 0,
      next_attempt_at: at,
      locked_by: null,
      locked_until: null,
      last_attempt_at: null,
      last_status_code: null,
      last_error: null,
      created_at: at,
      updated_at: at,
    })),
  );
  await repo.insertDeliveries(db, rows.flat());
  return rows.map((eventRows) => eventRows.map((row) => row.id));
}

/** Ends the endpoint's pending deliveries as failed, with `reason` (it was disabled or deleted). */
export async function failPendingDeliveriesOfEndpoint(db: Db, endpointId: string, reason: string, at: string): Promise<void> {
  await repo.failPendingDeliveriesOfEndpoint(db, endpointId, reason, at);
}

/** Forgets the endpoint's run of failures (it was enabled again): its deliveries go at its full pace at once. */
export async function forgetFailureRun(db: Db, endpointId: string): Promise<void> {
  await dispatcherRepo.deleteBackoffs(db, [endpointId]);
}

/** The endpoints an event was ever delivered to (a resent test event goes to the endpoint it tested). */
export async function endpointIdsOfEvent(db: Db, eventId: string): Promise<Set<string>> {
  return new Set((await repo.listDeliveryEndpointsOfEvent(db, eventId)).map((row) => row.endpoint_id));
}

/** Of these events, those with a delivery still pending (retention keeps them, whatever their age). */
export async function eventsWithPendingDeliveries(db: Db, eventIds: readonly string[]): Promise<Set<string>> {
  return new Set((await repo.listEventsWithDeliveries(db, eventIds, true)).map((row) => row.event_id));
}

/**
 * Deletes the ended deliveries of these events with their attempts, and returns the events that still
 * have a delivery (one made pending meanwhile, by a resend): those must stay.
 */
export async function deleteEndedDeliveriesOfEvents(db: Db, eventIds: readonly string[]): Promise<Set<string>> {
  await repo.deleteEndedDeliveriesOfEvents(db, eventIds);
  return new Set((await repo.listEventsWithDeliveries(db, eventIds, false)).map((row) => row.event_id));
}
