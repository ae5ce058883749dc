/**
 * Events and their deliveries: the outbox. An event is written, with one delivery per subscribed endpoint,
 * in the caller's transaction, so it exists exactly when the change that caused it was committed.
 */
import type { Db } from '../../db/database.js';
import type { Insertable } from 'kysely';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { CallRow } from '../calls/calls.tables.js';
import * as repo from '../webhooks/webhooks.repository.js';
import type { DeliveryTrigger, WebhookDeliveriesTable, WebhookEndpointRow, WebhookEventRow } from '../webhooks/webhooks.tables.js';

export const callEventTypes = ['call.completed', 'call.failed'] as const;
export type CallEventType = (typeof callEventTypes)[number];
/** Every type an endpoint may subscribe to; `["*"]` subscribes to all of them, those added later too. */
export const webhookEventTypes = [...callEventTypes, 'batch.completed'] as const;
export type EventType = (typeof webhookEventTypes)[number] | 'webhook.test';

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

export function endpointWants(endpoint: Pick<WebhookEndpointRow, 'event_types'>, type: EventType): boolean {
  if (type === 'webhook.test') return true;
  const types = JSON.parse(endpoint.event_types) as string[];
  return types.includes('*') || types.includes(type);
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
  for (const endpoint of await repo.listEnabledEndpointsOfAccounts(db, accountIds)) {
    const list = endpointsOf.get(endpoint.account_id);
    if (list) list.push(endpoint);
    else endpointsOf.set(endpoint.account_id, [endpoint]);
  }
  const written = inputs.map((input, index) => {
    const endpoints = (endpointsOf.get(input.accountId) ?? []).filter(
      (endpoint) => (input.endpointId === undefined || endpoint.id === input.endpointId) && endpointWants(endpoint, input.type),
    );
    return { eventId: events[index]!.id, rows: deliveryRows(now, events[index]!, endpoints, input.trigger ?? 'event') };
  });
  await repo.insertDeliveries(
    db,
    written.flatMap((event) => event.rows),
  );
  return written.map((event) => ({ eventId: event.eventId, deliveryIds: event.rows.map((row) => row.id) }));
}

/** The deliveries of an event, one per endpoint: of its account, in its mode (the overview counts them by it). */
function deliveryRows(
  now: Date,
  event: Pick<WebhookEventRow, 'id' | 'account_id' | 'mode'>,
  endpoints: readonly WebhookEndpointRow[],
  trigger: DeliveryTrigger,
): (Insertable<WebhookDeliveriesTable> & { id: string })[] {
  const at = isoTimestamp(now);
  return endpoints.map((endpoint) => ({
    id: newId('delivery', now.getTime()),
    event_id: event.id,
    endpoint_id: endpoint.id,
    account_id: event.account_id,
    mode: event.mode,
    status: 'pending' as const,
    trigger,
    attempt_count: 0,
    next_attempt_at: at,
    locked_by: null,
    locked_until: null,
    last_attempt_at: null,
    last_status_code: null,
    last_error: null,
    created_at: at,
    updated_at: at,
  }));
}

async function addDeliveries(
  db: Db,
  now: Date,
  event: WebhookEventRow,
  endpoints: readonly WebhookEndpointRow[],
  trigger: DeliveryTrigger,
): Promise<string[]> {
  const rows = deliveryRows(now, event, endpoints, trigger);
  await repo.insertDeliveries(db, rows);
  return rows.map((row) => row.id);
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
  const testedEndpoints =
    event.type === 'webhook.test' && options.endpointId === undefined
      ? new Set((await repo.listDeliveryEndpointsOfEvent(db, event.id)).map((row) => row.endpoint_id))
      : null;
  const endpoints = (await repo.listEnabledEndpoints(db, event.account_id)).filter((endpoint) =>
    options.endpointId !== undefined
      ? endpoint.id === options.endpointId
      : testedEndpoints
        ? testedEndpoints.has(endpoint.id)
        : endpointWants(endpoint, event.type as EventType),
  );
  if (options.endpointId !== undefined && endpoints.length === 0) {
    throw new ApiError('not_found', `no enabled endpoint ${options.endpointId} in the event's account`, { param: 'endpoint_id' });
  }
  return addDeliveries(db, clock.now(), event, endpoints, 'manual');
}
