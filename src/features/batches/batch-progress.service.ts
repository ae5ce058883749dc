/**
 * How a batch moves towards its end: a recipient ends with its call (in the transaction that records the
 * call's outcome), or fails while dialing; once none is left open, the batch is finished and its
 * `batch.completed` event is written in the same transaction (the outbox). Every step that may finish a
 * batch first locks its row, so that two recipients ending at once cannot each see the other still open
 * and both leave the batch unfinished. Nothing here places calls (that is the dialer's), so the calls
 * feature can call in here without a cycle.
 */
import type { Db } from '../../db/database.js';
import type { CallRow } from '../calls/calls.tables.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { enqueueEvents } from '../webhooks/events.service.js';
import { batchesWithCounts } from './batch-view.js';
import * as repo from './batches.repository.js';

/** Deliveries of `batch.completed` written, by batch; empty when no batch finished. */
export type FinishedBatches = ReadonlyMap<string, number>;

/**
 * Ends the recipients of batch calls that just ended, in `trx` (the transaction that recorded the calls'
 * outcomes), and finishes the batches left with no open recipient. Calls without a batch are ignored.
 */
export async function endRecipientsOfCalls(trx: Db, clock: Clock, calls: readonly CallRow[]): Promise<FinishedBatches> {
  const batchCalls = calls.filter((call) => call.batch_id !== null);
  if (batchCalls.length === 0) return new Map();
  const batchIds = [...new Set(batchCalls.map((call) => call.batch_id!))];
  await repo.lockBatches(trx, batchIds);
  const byCall = new Map(batchCalls.map((call) => [call.id, call]));
  const updatedAt = isoTimestamp(clock.now());
  const recipients = await repo.recipientsOfCalls(trx, [...byCall.keys()]);
  await repo.endRecipients(
    trx,
    recipients.map(({ id, call_id }) => {
      const call = byCall.get(call_id!)!;
      const failed = call.status === 'failed';
      return {
        id,
        status: failed ? 'failed' : 'completed',
        failure_reason: failed ? call.failure_reason : null,
        failure_message: failed ? call.failure_message : null,
        updated_at: updatedAt,
      };
    }),
  );
  return finishBatchesIfDone(trx, clock, batchIds);
}

/**
 * Fails recipients that are being dialed, in a transaction of its own: the provider refused them, timed
 * out, or (`leaseEndedBy`) their worker died mid-dial. Finishes their batch when they were its last.
 */
export async function failDialing(
  db: Db,
  clock: Clock,
  batchId: string,
  recipientIds: readonly string[],
  failure: { readonly reason: string; readonly message: string | null; readonly leaseEndedBy?: string },
): Promise<{ readonly failed: readonly string[]; readonly finished: FinishedBatches }> {
  return db.transaction().execute(async (trx) => {
    await repo.lockBatches(trx, [batchId]);
    const failed = await repo.failDialingRecipients(trx, recipientIds, { ...failure, now: isoTimestamp(clock.now()) });
    const finished = failed.length === 0 ? new Map<string, number>() : await finishBatchesIfDone(trx, clock, [batchId]);
    return { failed, finished };
  });
}

/**
 * Puts a dialing recipient back in the queue until `nextAttemptAt` (the provider could not take the call
 * now), under its batch's lock: had the batch been cancelled meanwhile, the recipient is cancelled instead,
 * as cancel did to every queued one (and that may finish the batch).
 */
export async function requeueDialing(
  db: Db,
  clock: Clock,
  batchId: string,
  recipientId: string,
  nextAttemptAt: string,
): Promise<{ readonly cancelled: boolean; readonly finished: FinishedBatches }> {
  return db.transaction().execute(async (trx) => {
    await repo.lockBatches(trx, [batchId]);
    const now = isoTimestamp(clock.now());
    const batch = await repo.findBatch(trx, batchId);
    if (batch?.status === 'cancelled') {
      await repo.cancelDialingRecipient(trx, recipientId, now);
      return { cancelled: true, finished: await finishBatchesIfDone(trx, clock, [batchId]) };
    }
    await repo.requeueDialingRecipient(trx, recipientId, nextAttemptAt, now);
    return { cancelled: false, finished: new Map<string, number>() };
  });
}

/**
 * Finishes those of the batches, locked by the caller in `trx`, that have no open recipient left, and
 * writes their `batch.completed` events. A batch is finished once only.
 */
export async function finishBatchesIfDone(trx: Db, clock: Clock, batchIds: readonly string[]): Promise<FinishedBatches> {
  const open = await repo.batchesWithOpenRecipients(trx, batchIds);
  const done = batchIds.filter((id) => !open.has(id));
  const finished = await repo.markBatchesFinished(trx, done, isoTimestamp(clock.now()));
  if (finished.length === 0) return new Map();
  const views = await batchesWithCounts(trx, finished);
  const written = await enqueueEvents(
    trx,
    clock,
    finished.map((batch, index) => ({ accountId: batch.account_id, type: 'batch.completed' as const, callId: null, data: views[index] })),
  );
  return new Map(finished.map((batch, index) => [batch.id, written[index]!.deliveryIds.length]));
}
