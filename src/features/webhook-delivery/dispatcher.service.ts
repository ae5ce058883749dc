/**
 * What the dispatcher reads and writes around an attempt: the deliveries it claims with what sending them
 * needs (their event's signed bytes, their endpoint's URL and secrets), and the results of many attempts
 * written in one transaction with what they change on the endpoints.
 */
import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import { eventPayloads } from '../events/event-reads.service.js';
import { applyAttemptChanges, endpointsByIds, type EndpointAttemptChange } from '../webhook-endpoints/endpoints.service.js';
import { lockedTransaction } from '../../db/locks.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import type { WebhookAttemptsTable } from './deliveries.tables.js';
import * as repo from './dispatcher.repository.js';
import { failureRunToBackOff, probeWaitMs } from './endpoint-backoff.js';

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
  /** Whether its endpoint was in a run of failures when it was claimed (an answer ends the run). */
  in_failure_run: boolean;
}

/** The one claim of deliveries at a time, on every worker of the database (see `claimDueDeliveries`). */
const claimLockKey = 0x63_67_77_64; // "cgwd"

/**
 * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`, at most `perEndpoint` in flight to
 * one endpoint and endpoints in turn (`repo.claimDueDeliveries`), under the claim lock; then reads their
 * events' payloads and their endpoints (deleted ones too: such a delivery ends without an attempt).
 */
export async function claimDueDeliveries(
  db: Db,
  claim: {
    readonly workerId: string;
    readonly now: string;
    readonly leaseUntil: string;
    readonly limit: number;
    readonly perEndpoint: number;
  },
): Promise<ClaimedDelivery[]> {
  const claimed = await lockedTransaction(db, claimLockKey, (trx) => repo.claimDueDeliveries(trx, claim));
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
      in_failure_run: Number(row.in_failure_run) > 0,
    };
  });
}

export interface AttemptRecord extends repo.DeliveryUpdate {
  readonly attempt: Insertable<WebhookAttemptsTable> | null;
  readonly endpointId: string;
  readonly endpoint: EndpointAttemptChange | null;
  /** Whether the receiver answered (any HTTP status); null without an attempt. */
  readonly answered?: boolean | null;
  /** Whether the endpoint may be in a run of failures, which an answer ends. */
  readonly inFailureRun?: boolean;
}

/** What the failure runs of endpoints need to know: now, and the first wait between probes. */
export interface BackoffContext {
  readonly now: Date;
  readonly firstWaitMs: number;
}

/** The endpoints whose deliveries began to wait with these results, and when each may be tried again. */
export type BackoffsBegun = Map<string, string>;

/**
 * Adds these results to their endpoints' runs of failures: an answer ends a run; attempts without one add to
 * it, and from `failureRunToBackOff` the endpoint's deliveries wait for a probe, which is due after a wait
 * that doubles with each probe that fails. Runs under the caller's transaction, after the endpoints' locks.
 */
async function recordFailureRuns(trx: Db, records: readonly AttemptRecord[], context: BackoffContext): Promise<BackoffsBegun> {
  const failures = new Map<string, number>();
  const answered = new Set<string>();
  for (const record of records) {
    if (!record.attempt || record.answered == null) continue;
    if (record.answered) {
      if (record.inFailureRun) answered.add(record.endpointId);
      failures.delete(record.endpointId);
    } else failures.set(record.endpointId, (failures.get(record.endpointId) ?? 0) + 1);
  }
  for (const id of failures.keys()) answered.delete(id);
  if (answered.size === 0 && failures.size === 0) return new Map();
  // The runs are locked in endpoint order before any changes, as the endpoints were.
  await repo.lockBackoffs(trx, [...answered, ...failures.keys()].sort());
  await repo.deleteBackoffs(trx, [...answered].sort());
  const at = isoTimestamp(context.now);
  const runs = await repo.addFailures(
    trx,
    [...failures.keys()].sort().map((endpointId) => ({ endpointId, failures: failures.get(endpointId)! })),
    at,
  );
  const begun: BackoffsBegun = new Map();
  for (const run of runs) {
    if (run.failures < failureRunToBackOff) continue;
    // Attempts that were in flight when the wait began do not make it longer; a probe that failed (or the
    // run that just got long enough) starts the next wait.
    if (run.next_try_at !== null && run.next_try_at > at) continue;
    const nextTryAt = isoTimestamp(addMs(context.now, probeWaitMs(context.firstWaitMs, run.probes)));
    await repo.setNextTry(trx, run.endpoint_id, { probes: run.probes + 1, next_try_at: nextTryAt, updated_at: at });
    begun.set(run.endpoint_id, nextTryAt);
  }
  return begun;
}

/**
 * Writes the results of several attempts in one transaction (one fsync for many deliveries). Rows are
 * locked in one fixed order, endpoints, then their runs of failures, then deliveries, each by id: two
 * workers recording batches that touch the same endpoints would otherwise deadlock on PostgreSQL, and the
 * losing batch would stay claimed until its lease ended and then be sent again. Returns how many results came too late: their claim
 * was lost (released at shutdown, or its lease ran out and another worker took the delivery).
 */
export async function recordAttempts(
  db: Db,
  records: readonly AttemptRecord[],
  backoff: BackoffContext,
): Promise<{ lost: number; backoffsBegun: BackoffsBegun }> {
  // Several results for one endpoint become one update, applied in the order the results came.
  const endpointChanges = new Map<string, EndpointAttemptChange>();
  for (const record of records) {
    if (record.endpoint) endpointChanges.set(record.endpointId, { ...endpointChanges.get(record.endpointId), ...record.endpoint });
  }
  return db.transaction().execute(async (trx) => {
    await applyAttemptChanges(trx, endpointChanges);
    const backoffsBegun = await recordFailureRuns(trx, records, backoff);
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
    return { lost: records.length - held.size, backoffsBegun }; // lost: claims lost, the results not recorded
  });
}
