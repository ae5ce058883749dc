/**
 * What the dispatcher reads and writes around an attempt: the deliveries it claims with what sending them
 * needs (their event's signed bytes, their endpoint's URL and secrets), and the results of many attempts
 * written in one transaction with what they change on the endpoints.
 */
import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import { eventPayloads } from '../events/event-reads.service.js';
import { applyAttemptChanges, endpointsByIds, type EndpointAttemptChange } from '../webhook-endpoints/endpoints.service.js';
import type { WebhookAttemptsTable } from './deliveries.tables.js';
import * as repo from './dispatcher.repository.js';

export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempt_count: number;
  payload: string;
  url: string;
  enabled: number;
  deleted_at: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
}

/**
 * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`, then reads their events' payloads
 * and their endpoints (deleted ones too: such a delivery ends without an attempt).
 */
export async function claimDueDeliveries(
  db: Db,
  workerId: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const claimed = await repo.claimDueDeliveries(db, workerId, now, leaseUntil, limit);
  if (claimed.length === 0) return [];
  const [payloads, endpoints] = await Promise.all([
    eventPayloads(
      db,
      claimed.map((row) => row.event_id),
    ),
    endpointsByIds(
      db,
      claimed.map((row) => row.endpoint_id),
    ),
  ]);
  return claimed.map((row) => {
    const endpoint = endpoints.get(row.endpoint_id)!;
    return {
      ...row,
      payload: payloads.get(row.event_id)!,
      url: endpoint.url,
      enabled: endpoint.enabled,
      deleted_at: endpoint.deleted_at,
      secret: endpoint.secret,
      previous_secret: endpoint.previous_secret,
      previous_secret_expires_at: endpoint.previous_secret_expires_at,
      failing_since: endpoint.failing_since,
    };
  });
}

export interface AttemptRecord extends repo.DeliveryUpdate {
  readonly attempt: Insertable<WebhookAttemptsTable> | null;
  readonly endpointId: string;
  readonly endpoint: EndpointAttemptChange | null;
}

/**
 * Writes the results of several attempts in one transaction (one fsync for many deliveries). Rows are
 * locked in one fixed order, endpoints then deliveries, each by id: two workers recording batches that
 * touch the same endpoints would otherwise deadlock on PostgreSQL, and the losing batch would stay
 * claimed until its lease ended and then be sent again. Returns how many results came too late: their claim
 * was lost (released at shutdown, or its lease ran out and another worker took the delivery).
 */
export async function recordAttempts(db: Db, records: readonly AttemptRecord[]): Promise<number> {
  // Several results for one endpoint become one update, applied in the order the results came.
  const endpointChanges = new Map<string, EndpointAttemptChange>();
  for (const record of records) {
    if (record.endpoint) endpointChanges.set(record.endpointId, { ...endpointChanges.get(record.endpointId), ...record.endpoint });
  }
  return db.transaction().execute(async (trx) => {
    await applyAttemptChanges(trx, endpointChanges);
    const sorted = [...records].sort((a, b) => (a.deliveryId < b.deliveryId ? -1 : a.deliveryId > b.deliveryId ? 1 : 0));
    await repo.lockDeliveriesInOrder(
      trx,
      sorted.map((record) => record.deliveryId),
    );
    const held = await repo.updateDeliveries(trx, sorted);
    // An endpoint disabled now (410, or failing for 5 days) keeps no pending deliveries, as when an operator
    // disables it.
    for (const id of [...endpointChanges.keys()].sort()) {
      const change = endpointChanges.get(id)!;
      if (change.enabled !== 0) continue;
      await repo.failUnclaimedPendingOfEndpoint(trx, id, change.disabled_reason ?? 'The endpoint was disabled.', change.updated_at!);
    }
    // An attempt whose claim was lost (released at shutdown, or its lease taken over) is not this worker's to
    // record: the delivery went back to pending and its next attempt will carry the same number.
    await repo.insertAttempts(
      trx,
      records.flatMap((record) => (record.attempt && held.has(record.deliveryId) ? [record.attempt] : [])),
    );
    return records.length - held.size; // claims lost: the results not recorded
  });
}
