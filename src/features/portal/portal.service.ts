/**
 * What the portal's pages show, gathered from the features' services and repositories. Every read is
 * scoped to the signed-in account: another account's endpoint, call or delivery is simply not found.
 */
import type { Db } from '../../db/database.js';
import type { WebhookAttemptRow } from '../../db/schema.js';
import { ApiError } from '../../errors/api-error.js';
import type { Clock } from '../../lib/clock.js';
import { listAgents } from '../agents/agents.service.js';
import { listApiKeys } from '../api-keys/api-keys.service.js';
import { getCall, listCalls } from '../calls/calls.service.js';
import { getEndpoint, listEndpoints } from '../webhooks/endpoints.service.js';
import { resendEvent } from '../webhooks/events.service.js';
import * as webhooks from '../webhooks/webhooks.repository.js';

export async function loadOverview(db: Db, accountId: string) {
  const [agents, keys, endpoints, recent] = await Promise.all([
    listAgents(db, accountId),
    listApiKeys(db, accountId),
    listEndpoints(db, accountId),
    listCalls(db, accountId, { limit: 5 }),
  ]);
  return {
    agents,
    activeKeys: keys.filter((key) => key.status === 'active').length,
    endpoints,
    recentCalls: recent?.data ?? [],
  };
}

export type DeliveryRow = Awaited<ReturnType<typeof webhooks.listDeliveries>>[number];
export type DeliveryWithAttempts = DeliveryRow & { attempts: WebhookAttemptRow[] };

async function withAttempts(db: Db, deliveries: DeliveryRow[]): Promise<DeliveryWithAttempts[]> {
  const attempts = await webhooks.listAttemptsOfDeliveries(db, deliveries.map((delivery) => delivery.id));
  return deliveries.map((delivery) => ({ ...delivery, attempts: attempts.filter((attempt) => attempt.delivery_id === delivery.id) }));
}

/** How many recent deliveries an endpoint's page shows. */
export const endpointDeliveriesShown = 25;

export async function loadEndpointPage(db: Db, accountId: string, endpointId: string) {
  const endpoint = await getEndpoint(db, endpointId, accountId);
  if (!endpoint) return null;
  const deliveries = await webhooks.listDeliveries(db, { accountId, endpointId, limit: endpointDeliveriesShown });
  return { endpoint, deliveries: await withAttempts(db, deliveries) };
}

export async function loadCallPage(db: Db, accountId: string, callId: string) {
  const call = await getCall(db, accountId, callId);
  if (!call) return null;
  const events = await webhooks.listEventsForCall(db, call.id, accountId);
  const eventsWithDeliveries = await Promise.all(
    events.map(async (event) => ({
      event,
      deliveries: await withAttempts(db, await webhooks.listDeliveries(db, { accountId, eventId: event.id, limit: 50 })),
    })),
  );
  return { call, events: eventsWithDeliveries };
}

export type ResendResult = 'resent' | 'not_found' | 'endpoint_disabled';

/** Sends a delivery's event again to the same endpoint; the delivery must be of this account and endpoint. */
export async function resendDelivery(db: Db, clock: Clock, accountId: string, endpointId: string, deliveryId: string): Promise<ResendResult> {
  const delivery = await webhooks.findDeliveryInAccount(db, accountId, deliveryId);
  if (!delivery || delivery.endpoint_id !== endpointId) return 'not_found';
  try {
    await resendEvent(db, clock, delivery.event_id, { endpointId, accountId });
    return 'resent';
  } catch (error) {
    // The delivery's event is in this account, so what is not found is an enabled endpoint.
    if (error instanceof ApiError && error.code === 'not_found') return 'endpoint_disabled';
    throw error;
  }
}
