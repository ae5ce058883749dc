/**
 * What the portal's pages show, gathered from the features' services. Every read is scoped to the
 * signed-in account: another account's endpoint, call or delivery is simply not found.
 */
import type { Db } from '../db/database.js';
import { ApiError } from '../errors/api-error.js';
import type { Clock } from '../lib/clock.js';
import { listAgents } from '../features/agents/agents.service.js';
import { listApiKeys } from '../features/api-keys/api-keys.service.js';
import { readTranscript, recordingKept } from '../features/calls/call-content.service.js';
import { getCallWithMode, listCallsWithMode, type CallWithMode } from '../features/calls/calls.service.js';
import { dialHistoryOfCall } from '../features/calls/dials.service.js';
import { concurrencyOf } from '../features/concurrency/concurrency.service.js';
import { listEventsOfCall } from '../features/events/event-reads.service.js';
import { endpointBackoffs, findDelivery, listDeliveriesWithAttempts } from '../features/webhook-delivery/deliveries.service.js';
import { endpointTroubles } from '../features/webhook-delivery/endpoint-health.service.js';
import { getEndpoint, listEndpoints } from '../features/webhook-endpoints/endpoints.service.js';
import { resendEvent } from '../features/webhook-delivery/fan-out.service.js';

export async function loadOverview(db: Db, clock: Clock, accountId: string) {
  const [agents, keys, endpoints, recent, concurrency] = await Promise.all([
    listAgents(db, accountId),
    listApiKeys(db, accountId),
    listEndpoints(db, accountId),
    listCallsWithMode(db, accountId, { limit: 5 }),
    concurrencyOf(db, clock, accountId),
  ]);
  // An endpoint that fails is not "enabled" to the person reading, nor is one its failures disabled "no endpoint".
  const troubles = await endpointTroubles(
    db,
    endpoints.map((endpoint) => endpoint.id),
    clock.now(),
  );
  return {
    agents,
    activeKeys: keys.filter((key) => key.status === 'active').length,
    endpoints,
    troubledEndpoints: endpoints.flatMap((endpoint) => {
      const trouble = troubles.get(endpoint.id);
      return trouble ? [{ endpoint, trouble }] : [];
    }),
    recentCalls: recent?.data ?? [],
    concurrency,
  };
}

/** How many recent deliveries an endpoint's page shows. */
export const endpointDeliveriesShown = 25;

export async function loadEndpointPage(db: Db, accountId: string, endpointId: string, now: Date) {
  const endpoint = await getEndpoint(db, endpointId, accountId);
  if (!endpoint) return null;
  const deliveries = await listDeliveriesWithAttempts(db, { accountId, endpointId, limit: endpointDeliveriesShown });
  const backoff = (await endpointBackoffs(db, [endpoint.id], now)).get(endpoint.id) ?? null;
  const madeBy = endpoint.created_by_key_id === null ? null : ((await keyNamesOf(db, accountId)).get(endpoint.created_by_key_id) ?? null);
  return { endpoint, deliveries, backoff, madeBy };
}

/** How the account's keys are named for people: by id, `name (cg_live_1a2b…)`, revoked ones too. */
export async function keyNamesOf(db: Db, accountId: string): Promise<Map<string, string>> {
  return new Map((await listApiKeys(db, accountId)).map((key) => [key.id, `${key.name} (${key.prefix}…)`]));
}

export async function loadCallPage(db: Db, accountId: string, callId: string) {
  const call = await getCallWithMode(db, accountId, callId);
  if (!call) return null;
  const [events, dial, content, placedWith] = await Promise.all([
    listEventsOfCall(db, accountId, call.id),
    dialHistoryOfCall(db, accountId, call.id),
    callContentOf(db, accountId, call),
    // The provider that placed it: a live call on a simulator agent is simulated, yet counted as live.
    db.selectFrom('calls').select('provider').where('account_id', '=', accountId).where('id', '=', call.id).executeTakeFirstOrThrow(),
  ]);
  const eventsWithDeliveries = await Promise.all(
    events.map(async (event) => ({
      event,
      deliveries: await listDeliveriesWithAttempts(db, { accountId, eventId: event.id, limit: 50 }),
    })),
  );
  return { call, provider: placedWith.provider, dial, events: eventsWithDeliveries, content };
}

/** What was said on an ended call: its transcript, and whether it has a recording to play (null before its end). */
async function callContentOf(db: Db, accountId: string, call: Pick<CallWithMode, 'id' | 'status'>) {
  if (call.status === 'initiated') return null;
  const [transcript, hasRecording] = await Promise.all([readTranscript(db, { accountId }, call.id), recordingKept(db, call.id)]);
  return { turns: transcript.turns, hasRecording };
}

/**
 * Sends a delivery's event again to the same endpoint; the delivery must be of this account and endpoint
 * (a `not_found` otherwise), and the endpoint enabled (an `invalid_request` naming `endpoint_id` otherwise).
 */
export async function resendDelivery(db: Db, clock: Clock, accountId: string, endpointId: string, deliveryId: string): Promise<void> {
  const delivery = await findDelivery(db, accountId, deliveryId);
  if (!delivery || delivery.endpoint_id !== endpointId) throw new ApiError('not_found');
  try {
    await resendEvent(db, clock, delivery.event_id, { endpointId, accountId });
  } catch (error) {
    // The delivery's event is in this account, so what is not found is an enabled endpoint.
    if (!(error instanceof ApiError && error.code === 'not_found')) throw error;
    throw new ApiError('invalid_request', 'The endpoint is disabled or deleted: enable it to resend.', { param: 'endpoint_id' });
  }
}
