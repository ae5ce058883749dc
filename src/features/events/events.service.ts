/**
 * Events and their deliveries: the outbox. An event is written, with one delivery per subscribed endpoint,
 * in the caller's transaction, so it exists exactly when the change that caused it was committed.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { CallRow } from '../calls/calls.tables.js';
import { addDeliveries, endpointIdsOfEvent } from '../webhook-delivery/delivery-queue.service.js';
import type { DeliveryTrigger } from '../webhook-delivery/deliveries.tables.js';
import { listEnabledEndpoints, listEnabledEndpointsOfAccounts } from '../webhook-endpoints/endpoints.service.js';
import type { WebhookEndpointRow } from '../webhook-endpoints/endpoints.tables.js';
import { endpointWants, type CallEventType, type EventType } from './event-types.js';
import * as repo from './events.repository.js';

/** `data` of `call.completed` (spec 6). */
export interface CallCompletedData {
  id: string;
  agent_id: string;
  status: 'completed';
  duration_seconds: number;
  transcript_summary: string;
  started_at: string;
  ended_at: string;
  /** Only on a call a batch placed (not in spec 6, which knows single calls only). */
  batch_id?: string;
  reference?: string | null;
}

/** `data` of `call.failed` (the spec leaves it open; see docs/webhooks.md). */
export interface CallFailedData {
  id: string;
  agent_id: string;
  status: 'failed';
  failure_reason: string;
  failure_message: string | null;
  failed_at: string;
  batch_id?: string;
  reference?: string | null;
}

export interface EventEnvelope<T = unknown> {
  id: string;
  type: EventType;
  created_at: string;
  data: T;
}

/** A batch's call carries its batch and reference after the spec's fields; a single call only those. */
function withBatch<T extends CallCompletedData | CallFailedData>(call: CallRow, data: T): T {
  return call.batch_id === null ? data : { ...data, batch_id: call.batch_id, reference: call.reference };
}

export function callOutcomeEvent(call: CallRow): { type: CallEventType; data: CallCompletedData | CallFailedData } | null {
  if (call.status === 'completed') {
    return {
      type: 'call.completed',
      data: withBatch(call, {
        id: call.id,
        agent_id: call.agent_id,
        status: 'completed',
        duration_seconds: call.duration_seconds ?? 0,
        transcript_summary: call.transcript_summary ?? '',
        started_at: call.started_at ?? call.created_at,
        ended_at: call.ended_at ?? call.updated_at,
      }),
    };
  }
  if (call.status === 'failed') {
    return {
      type: 'call.failed',
      data: withBatch(call, {
        id: call.id,
        agent_id: call.agent_id,
        status: 'failed',
        failure_reason: call.failure_reason ?? 'unknown',
        failure_message: call.failure_message,
        failed_at: call.failed_at ?? call.updated_at,
      }),
    };
  }
  return null;
}

export interface NewEvent {
  accountId: string;
  /** The mode of the call or batch the event reports (null for `webhook.test`): API keys read their mode's events only. */
  mode: ApiKeyMode | null;
  type: EventType;
  callId: string | null;
  data: unknown;
  /** Deliver to this endpoint only (test events, resends); otherwise to every subscribed endpoint. */
  endpointId?: string;
  trigger?: DeliveryTrigger;
}

/** Writes an event and its deliveries in `db` (pass the transaction of the change that caused it). */
export async function enqueueEvent(db: Db, clock: Clock, input: NewEvent): Promise<{ eventId: string; deliveryIds: string[] }> {
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
  inputs: readonly NewEvent[],
): Promise<{ eventId: string; deliveryIds: string[] }[]> {
  if (inputs.length === 0) return [];
  const now = clock.now();
  const createdAt = isoTimestamp(now);
  const events = inputs.map((input) => {
    const eventId = newId('event', now.getTime());
    const envelope: EventEnvelope = { id: eventId, type: input.type, created_at: createdAt, data: input.data };
    return {
      id: eventId,
      account_id: input.accountId,
      mode: input.mode,
      type: input.type,
      call_id: input.callId,
      payload: JSON.stringify(envelope),
      created_at: createdAt,
    };
  });
  await repo.insertEvents(db, events);
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
      eventId: events[index]!.id,
      accountId: input.accountId,
      mode: input.mode,
      endpointIds: (endpointsOf.get(input.accountId) ?? [])
        .filter((endpoint) => (input.endpointId === undefined || endpoint.id === input.endpointId) && endpointWants(endpoint, input.type))
        .map((endpoint) => endpoint.id),
      trigger: input.trigger ?? 'event',
    })),
  );
  return events.map((event, index) => ({ eventId: event.id, deliveryIds: deliveryIds[index]! }));
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
  const event = await repo.findEvent(db, eventId);
  if (!event || (options.accountId !== undefined && event.account_id !== options.accountId)) {
    throw new ApiError('not_found', `no event ${eventId}`, { param: 'event_id' });
  }
  // A test event belongs to the endpoint it tested: resent without --endpoint, it goes there only.
  const testedEndpoints = event.type === 'webhook.test' && options.endpointId === undefined ? await endpointIdsOfEvent(db, event.id) : null;
  const endpoints = (await listEnabledEndpoints(db, event.account_id)).filter((endpoint) =>
    options.endpointId !== undefined
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
    callId: null,
    data: { endpoint_id: endpoint.id, message: 'This is a test event from callgate.' },
    endpointId: endpoint.id,
    trigger: 'test',
  });
  return { eventId, deliveryId: deliveryIds[0] };
}
