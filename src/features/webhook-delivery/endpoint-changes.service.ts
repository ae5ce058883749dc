/**
 * Changing an endpoint, with what that does to its deliveries: disabled or deleted, its pending deliveries
 * end as failed; enabled again, its run of failures is forgotten. The portal and the CLI change endpoints
 * here. It is this room's because it writes deliveries: the endpoint store (webhook-endpoints), below,
 * saves the endpoint and knows nothing of them.
 */
import type { Db } from '../../db/database.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import {
  markEndpointDeleted,
  saveEndpointChanges,
  toEndpointView,
  type EndpointChanges,
  type EndpointView,
} from '../webhook-endpoints/endpoints.service.js';
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
