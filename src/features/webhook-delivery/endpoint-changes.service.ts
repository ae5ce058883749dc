/**
 * Changing an endpoint, with what that does to its deliveries: disabled or deleted, its pending deliveries
 * end as failed; enabled again, its run of failures is forgotten. The portal, the CLI and PATCH and DELETE
 * /v1/webhook_endpoints change endpoints here. It is this room's because it writes deliveries: the endpoint store (webhook-endpoints), below,
 * saves the endpoint and knows nothing of them.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import {
  markEndpointDeleted,
  saveEndpointChanges,
  toEndpointView,
  type EndpointChanges,
  type EndpointView,
} from '../webhook-endpoints/endpoints.service.js';
import { endpointOfKey, eventTypesOf, toWebhookEndpoint, type EndpointKey } from '../webhook-endpoints/endpoints-api.service.js';
import type { UpdateWebhookEndpointBody, WebhookEndpoint } from '../webhook-endpoints/endpoints.schemas.js';
import type { WebhookEndpointRow } from '../webhook-endpoints/endpoints.tables.js';
import { failPendingDeliveriesOfEndpoint, forgetFailureRun } from './delivery-queue.service.js';

/** Changes an endpoint; a refused field is `invalid_request`. */
export async function updateEndpoint(
  db: Db,
  clock: Clock,
  allowPrivate: boolean,
  endpoint: WebhookEndpointRow,
  changes: EndpointChanges,
): Promise<EndpointView> {
  const saved = await saveEndpointChanges(db, clock, allowPrivate, endpoint, changes);
  if (changes.enabled === false) {
    await failPendingDeliveriesOfEndpoint(db, endpoint.id, 'The endpoint was disabled.', saved.updated_at);
  }
  if (changes.enabled === true) await forgetFailureRun(db, endpoint.id);
  return toEndpointView(saved);
}

/** Deletes an endpoint (kept for its delivery history); its pending deliveries end as failed. */
export async function deleteEndpoint(db: Db, clock: Clock, endpoint: WebhookEndpointRow): Promise<void> {
  const at = isoTimestamp(clock.now());
  await db.transaction().execute(async (trx) => {
    await markEndpointDeleted(trx, endpoint.id, at);
    await failPendingDeliveriesOfEndpoint(trx, endpoint.id, 'The endpoint was deleted.', at);
  });
}

/**
 * PATCH /v1/webhook_endpoints/{id}: the key's endpoint changed as the portal changes one (`disabled: false`
 * enables it again as `callgate webhooks enable` does), and answered as it now is. A field equal to what the
 * endpoint has is left alone: sending `disabled: false` to an enabled endpoint must not reset its failure
 * clock, nor an unchanged URL resolve its host again.
 */
export async function updateEndpointOfKey(
  db: Db,
  clock: Clock,
  allowPrivate: boolean,
  key: EndpointKey,
  id: string,
  body: UpdateWebhookEndpointBody,
): Promise<WebhookEndpoint> {
  if (Object.keys(body).length === 0) {
    throw new ApiError('invalid_request', 'Send at least one field to change: url, enabled_events, description or disabled.');
  }
  const endpoint = await endpointOfKey(db, key, id);
  const changes: EndpointChanges = {
    ...(body.url === undefined || body.url === endpoint.url ? {} : { url: body.url }),
    ...(body.description === undefined ? {} : { description: body.description }),
    ...(body.enabled_events === undefined ? {} : { eventTypes: eventTypesOf(body.enabled_events) }),
    ...(body.disabled === undefined || body.disabled === (endpoint.enabled === 0) ? {} : { enabled: !body.disabled }),
  };
  await updateEndpoint(db, clock, allowPrivate, endpoint, changes);
  return toWebhookEndpoint(await endpointOfKey(db, key, id));
}

/** DELETE /v1/webhook_endpoints/{id}: the key's endpoint deleted (a second time it is not found). */
export async function deleteEndpointOfKey(db: Db, clock: Clock, key: EndpointKey, id: string): Promise<void> {
  await deleteEndpoint(db, clock, await endpointOfKey(db, key, id));
}
