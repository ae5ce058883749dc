/**
 * An event and its deliveries, written together: the features that cause events (calls, batches, the
 * portal and the CLI's test and resend) call here, and each event is written through the events room with
 * one delivery per subscribed endpoint, in the caller's transaction, so both exist exactly when the change
 * that caused them was committed. The fan-out is this room's because it is the one above both the events
 * and the endpoints: they know nothing of deliveries.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import type { Clock } from '../../lib/clock.js';
import { findEvent } from '../events/event-reads.service.js';
import { endpointWants, type EventType } from '../events/event-types.js';
import { writeEvents, type NewEvent } from '../events/events.service.js';
import { listEnabledEndpoints, listEnabledEndpointsOfAccounts } from '../webhook-endpoints/endpoints.service.js';
import type { WebhookEndpointRow } from '../webhook-endpoints/endpoints.tables.js';
import type { DeliveryTrigger } from './deliveries.tables.js';
import { addDeliveries, endpointIdsOfEvent } from './delivery-queue.service.js';

export interface EventToDeliver extends NewEvent {
  /** Deliver to this endpoint only (test events, resends); otherwise to every subscribed endpoint. */
  endpointId?: string;
  trigger?: DeliveryTrigger;
}

/** Writes an event and its deliveries in `db` (pass the transaction of the change that caused it). */
export async function enqueueEvent(db: Db, clock: Clock, input: EventToDeliver): Promise<{ eventId: string; deliveryIds: string[] }> {
  const [written] = await enqueueEvents(db, clock, [input]);
  return written!;
}

/**
 * Writes several events and their deliveries in `db`, in three statements whatever their number (the
 * events, the endpoints of their accounts, the deliveries), so that the call monitor ending a batch of
 * calls does not pay a round trip per call. Results are in the order of `inputs`.
 */
export async function enqueueEvents(
  db: Db,
  clock: Clock,
  inputs: readonly EventToDeliver[],
): Promise<{ eventId: string; deliveryIds: string[] }[]> {
  if (inputs.length === 0) return [];
  const now = clock.now();
  const eventIds = await writeEvents(db, now, inputs);
  const accountIds = [...new Set(inputs.map((input) => input.accountId))];
  const endpointsOf = new Map<string, WebhookEndpointRow[]>();
  for (const endpoint of await listEnabledEndpointsOfAccounts(db, accountIds)) {
    const list = endpointsOf.get(endpoint.account_id);
    if (list) list.push(endpoint);
    else endpointsOf.set(endpoint.account_id, [endpoint]);
  }
  const deliveryIds = await addDeliveries(
    db,
    now,
    inputs.map((input, index) => ({
      eventId: eventIds[index]!,
      accountId: input.accountId,
      mode: input.mode,
      endpointIds: (endpointsOf.get(input.accountId) ?? [])
        .filter(
          (endpoint) =>
            (input.endpointId === undefined ? endpoint.mode === input.mode : endpoint.id === input.endpointId) &&
            endpointWants(endpoint, input.type),
        )
        .map((endpoint) => endpoint.id),
      trigger: input.trigger ?? 'event',
    })),
  );
  return eventIds.map((eventId, index) => ({ eventId, deliveryIds: deliveryIds[index]! }));
}

/**
 * Sends an existing event again (same id, same body): a new manual delivery to one endpoint of the
 * event's account, or to every enabled endpoint that wants its type. An unknown event, or an endpoint not
 * enabled in the event's account, is `not_found`.
 */
export async function resendEvent(
  db: Db,
  clock: Clock,
  eventId: string,
  options: { endpointId?: string; accountId?: string } = {},
): Promise<string[]> {
  const event = await findEvent(db, eventId);
  if (!event || (options.accountId !== undefined && event.account_id !== options.accountId)) {
    throw new ApiError('not_found', `no event ${eventId}`, { param: 'event_id' });
  }
  // A test event belongs to the endpoint it tested: resent without --endpoint, it goes there only.
  const testedEndpoints = event.type === 'webhook.test' && options.endpointId === undefined ? await endpointIdsOfEvent(db, event.id) : null;
  // An event goes to endpoints of its own mode only (a test event, in no mode, to the endpoint it tested).
  const endpoints = (await listEnabledEndpoints(db, event.account_id)).filter((endpoint) =>
    event.mode !== null && endpoint.mode !== event.mode
      ? false
      : options.endpointId !== undefined
        ? endpoint.id === options.endpointId
        : testedEndpoints
          ? testedEndpoints.has(endpoint.id)
          : endpointWants(endpoint, event.type as EventType),
  );
  if (options.endpointId !== undefined && endpoints.length === 0) {
    throw new ApiError('not_found', `no enabled endpoint ${options.endpointId} in the event's account`, { param: 'endpoint_id' });
  }
  const [deliveryIds] = await addDeliveries(db, clock.now(), [
    {
      eventId: event.id,
      accountId: event.account_id,
      mode: event.mode,
      endpointIds: endpoints.map((endpoint) => endpoint.id),
      trigger: 'manual',
    },
  ]);
  return deliveryIds!;
}

/** Queues a signed `webhook.test` event for one endpoint. */
export async function sendTestEvent(
  db: Db,
  clock: Clock,
  endpoint: WebhookEndpointRow,
): Promise<{ eventId: string; deliveryId: string | undefined }> {
  if (endpoint.enabled !== 1) throw new ApiError('invalid_request', 'the endpoint is disabled; enable it first');
  const { eventId, deliveryIds } = await enqueueEvent(db, clock, {
    accountId: endpoint.account_id,
    // A test of an endpoint, in no mode: the events API does not list it.
    mode: null,
    type: 'webhook.test',
    livemode: endpoint.mode === 'live',
    callId: null,
    data: { endpoint_id: endpoint.id, message: 'This is a test event from callgate.' },
    endpointId: endpoint.id,
    trigger: 'test',
  });
  return { eventId, deliveryId: deliveryIds[0] };
}
