/**
 * How a batch moves towards its end: a recipient ends with its call (in the transaction that records the
 * call's outcome), or fails while dialing; once none is left open, the batch is finished and its
 * `batch.completed` event is written in the same transaction as the finish (the outbox). Every step that
 * may finish a batch does it under the batch's row lock, so that two recipients ending at once cannot each
 * see the other still open and both leave the batch unfinished. A call's end is the one step that does not
 * hold the lock (a batch of 1,000 calls at once ends a hundred a second, and would wait in line for it): its
 * recipient ends without it, and the batch is finished after that commit (`finishEndedBatches`), or by the
 * dialer's sweep had the process stopped in between. Nothing here places calls (that is the dialer's), so
 * the calls feature can call in here without a cycle.
 */
import type { Db } from '../../db/database.js';
import type { CallRow } from '../calls/calls.tables.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { enqueueEvents } from '../webhook-delivery/fan-out.service.js';
import { batchesWithCounts } from './batch-view.js';
import { nextOpening, windowZones, type CallingWindow } from './calling-window.js';
import type { Batch } from './batches.schemas.js';
import type { BatchRow, RecipientRow } from './batches.tables.js';
import { deferralDelayMs } from './deferral.js';
import * as repo from './batches.repository.js';

/** Deliveries of `batch.completed` written, by batch; empty when no batch finished. */
export type FinishedBatches = ReadonlyMap<string, number>;

const callingWindowOf = (batch: BatchRow): CallingWindow | null =>
  batch.calling_window === null ? null : (JSON.parse(batch.calling_window) as CallingWindow);

/** The zones a recipient's window is checked in: as stored at its batch's creation. */
const zonesOf = (window: CallingWindow, recipient: Pick<RecipientRow, 'time_zones' | 'to_number'>): string[] =>
  recipient.time_zones === null ? windowZones(window, recipient.to_number) : (JSON.parse(recipient.time_zones) as string[]);

/**
 * When a recipient whose call failed for `reason` is dialed again: after its batch's retry delay, at the
 * next opening of its calling window; null when that was its last attempt (or its batch retries no such
 * failure, or was cancelled, or the window never opens again).
 */
function retryAt(batch: BatchRow, recipient: repo.RecipientOfCall, reason: string | null, now: Date): Date | null {
  if (batch.retry === null || batch.status === 'cancelled') return null;
  const retry = JSON.parse(batch.retry) as NonNullable<Batch['retry']>;
  if (!retry.on.some((on) => on === reason) || recipient.attempts >= retry.max_attempts) return null;
  const after = addMs(now, retry.delay_minutes * 60_000);
  const window = callingWindowOf(batch);
  return window ? nextOpening(window, zonesOf(window, recipient), after) : after;
}

/** A call refused at the provider's concurrency limit: backed off as after a 429 without Retry-After. */
const refusedAtLimit = { kind: 'unavailable', message: 'concurrency limit', retryable: true } as const;

/**
 * Ends the recipients of batch calls that just ended, in `trx` (the transaction that recorded the calls'
 * outcomes), and returns their batches, which the caller finishes once `trx` has committed
 * (`finishEndedBatches`). A recipient whose call failed for a reason its batch retries, with attempts left, is
 * queued again instead (and keeps its batch open); so is one whose call the provider refused at its
 * concurrency limit (`concurrencyRefused`, ids of calls), with the backoff of a 429 and its attempt given
 * back: nobody was dialed. Calls without a batch are ignored.
 */
export async function endRecipientsOfCalls(
  trx: Db,
  clock: Clock,
  calls: readonly CallRow[],
  concurrencyRefused: ReadonlySet<string> = new Set(),
): Promise<readonly string[]> {
  const batchCalls = calls.filter((call) => call.batch_id !== null);
  if (batchCalls.length === 0) return [];
  const batchIds = [...new Set(batchCalls.map((call) => call.batch_id!))];
  const byCall = new Map(batchCalls.map((call) => [call.id, call]));
  const now = clock.now();
  const updatedAt = isoTimestamp(now);
  const recipients = await repo.recipientsOfCalls(trx, [...byCall.keys()]);
  let batches = await repo.findBatches(trx, batchIds);
  // Queued again, a recipient must not cross a cancel (which cancels the queued ones under the batch's lock):
  // the batches where that may happen are locked and read again. An ending needs no lock.
  const requeueing = [
    ...new Set(
      recipients
        .filter((recipient) => {
          const call = byCall.get(recipient.call_id!)!;
          const batch = batches.get(recipient.batch_id);
          return (
            call.status === 'failed' && batch && (concurrencyRefused.has(call.id) || retryAt(batch, recipient, call.failure_reason, now))
          );
        })
        .map((recipient) => recipient.batch_id),
    ),
  ];
  if (requeueing.length > 0) {
    await repo.lockBatches(trx, requeueing);
    batches = new Map([...batches, ...(await repo.findBatches(trx, requeueing))]);
  }
  const endings: repo.RecipientEnding[] = [];
  const retries: repo.RecipientRetry[] = [];
  const deferred: { id: string; next_attempt_at: string; updated_at: string }[] = [];
  for (const recipient of recipients) {
    const call = byCall.get(recipient.call_id!)!;
    const failed = call.status === 'failed';
    const batch = batches.get(recipient.batch_id);
    if (failed && concurrencyRefused.has(call.id) && batch && batch.status !== 'cancelled') {
      const delay = deferralDelayMs(recipient.deferrals, refusedAtLimit, Math.random);
      deferred.push({ id: recipient.id, next_attempt_at: isoTimestamp(addMs(now, delay)), updated_at: updatedAt });
      continue;
    }
    const again = failed && batch ? retryAt(batch, recipient, call.failure_reason, now) : null;
    if (again) {
      retries.push({
        id: recipient.id,
        next_attempt_at: isoTimestamp(again),
        failure_reason: call.failure_reason,
        failure_message: call.failure_message,
        updated_at: updatedAt,
      });
      continue;
    }
    endings.push({
      id: recipient.id,
      // A call cancelled before anyone answered ends its recipient cancelled, as a cancelled batch's queued ones.
      status: failed ? (call.failure_reason === 'cancelled' ? 'cancelled' : 'failed') : 'completed',
      failure_reason: failed ? call.failure_reason : null,
      failure_message: failed ? call.failure_message : null,
      updated_at: updatedAt,
    });
  }
  await repo.endRecipients(trx, endings);
  await repo.requeueForRetry(trx, retries);
  await repo.requeueRefusedCalls(trx, deferred);
  return batchIds;
}

/**
 * Finishes those of `batchIds` left with no open recipient, each under its lock: after the transaction
 * that ended their recipients' calls has committed (endRecipientsOfCalls), so that of two ending at once,
 * the later sees the earlier's recipient ended. Looked at first without the lock: nearly every call's end
 * leaves its batch open.
 */
export async function finishEndedBatches(db: Db, clock: Clock, batchIds: readonly string[]): Promise<FinishedBatches> {
  if (batchIds.length === 0) return new Map();
  const open = await repo.batchesWithOpenRecipients(db, batchIds);
  const done = batchIds.filter((id) => !open.has(id));
  if (done.length === 0) return new Map();
  return db.transaction().execute(async (trx) => {
    await repo.lockBatches(trx, done);
    return finishBatchesIfDone(trx, clock, done);
  });
}

/** Finishes batches left with no open recipient by a process that stopped before finishing them (the dialer's sweep). */
export async function finishLeftBatches(db: Db, clock: Clock, limit: number): Promise<FinishedBatches> {
  return finishEndedBatches(db, clock, await repo.unfinishedBatchesWithoutOpenRecipients(db, limit));
}

/**
 * Of the recipients just claimed (`dialing`, in the claim's transaction, under the batch's lock), those
 * whose calling window is open at `now`; the others go back to the queue until it opens. One whose window
 * never opens again (its zones drifted apart with a change of time) fails, and may finish the batch.
 */
export async function holdOutsideWindow(
  trx: Db,
  clock: Clock,
  batch: BatchRow,
  claimed: readonly RecipientRow[],
  now: Date,
): Promise<{ readonly dial: RecipientRow[]; readonly finished: FinishedBatches }> {
  const window = callingWindowOf(batch);
  if (!window) return { dial: [...claimed], finished: new Map() };
  const openingOf = new Map<string, Date | null>();
  const dial: RecipientRow[] = [];
  const held = new Map<string, string[]>();
  const never: string[] = [];
  for (const recipient of claimed) {
    const zones = zonesOf(window, recipient);
    const key = JSON.stringify(zones);
    if (!openingOf.has(key)) openingOf.set(key, nextOpening(window, zones, now));
    const opening = openingOf.get(key)!;
    if (opening === null) never.push(recipient.id);
    else if (opening.getTime() > now.getTime()) held.set(key, [...(held.get(key) ?? []), recipient.id]);
    else dial.push(recipient);
  }
  const at = isoTimestamp(now);
  for (const [timeZones, ids] of held) {
    await repo.holdUntilOpening(trx, batch.id, { ids, timeZones, opening: isoTimestamp(openingOf.get(timeZones)!), now: at });
  }
  if (never.length === 0) return { dial, finished: new Map() };
  await repo.failDialingRecipients(trx, never, {
    notDialed: true,
    reason: 'outside_calling_window',
    message: `The calling window ${window.start}-${window.end} no longer opens in all of this number's time zones at once.`,
    now: at,
  });
  return { dial, finished: await finishBatchesIfDone(trx, clock, [batch.id]) };
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
  failure: { readonly reason: string; readonly message: string | null; readonly leaseEndedBy?: string; readonly notDialed?: boolean },
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
  return db.transaction().execute((trx) => requeueDialingIn(trx, clock, batchId, recipientId, nextAttemptAt, true));
}

async function requeueDialingIn(
  trx: Db,
  clock: Clock,
  batchId: string,
  recipientId: string,
  nextAttemptAt: string,
  deferral: boolean,
): Promise<{ readonly cancelled: boolean; readonly finished: FinishedBatches }> {
  await repo.lockBatches(trx, [batchId]);
  const now = isoTimestamp(clock.now());
  const batch = await repo.findBatch(trx, batchId);
  if (batch?.status === 'cancelled') {
    await repo.cancelDialingRecipient(trx, recipientId, now);
    return { cancelled: true, finished: await finishBatchesIfDone(trx, clock, [batchId]) };
  }
  await repo.requeueDialingRecipient(trx, recipientId, nextAttemptAt, now, deferral);
  return { cancelled: false, finished: new Map<string, number>() };
}

/**
 * Holds a dialing recipient for its dial, in `trx` (the dial's record): until the dial is known (placed,
 * found, not placed), nothing else may fail it or dial it again.
 */
export async function holdRecipientForDial(trx: Db, recipientId: string, until: Date): Promise<void> {
  await repo.holdDialingRecipient(trx, recipientId, isoTimestamp(until));
}

/**
 * A recipient's dial whose answer was lost placed no call (the provider lists none): it is dialed again
 * at once, that one dial, without using an attempt. In `trx`, the transaction that ends the dial.
 */
export async function redialAfterLostDial(trx: Db, clock: Clock, batchId: string, recipientId: string): Promise<FinishedBatches> {
  const { finished } = await requeueDialingIn(trx, clock, batchId, recipientId, isoTimestamp(clock.now()), false);
  return finished;
}

/**
 * A recipient whose `dials` dials all lost their answer and placed no call (the provider lists none): it
 * fails (`provider_error`) instead of being dialed again. In `trx`, the transaction that ends the last dial.
 */
export async function failAfterLostDials(
  trx: Db,
  clock: Clock,
  batchId: string,
  recipientId: string,
  dials: number,
): Promise<FinishedBatches> {
  await repo.lockBatches(trx, [batchId]);
  const message = `The voice provider's answer was lost on ${dials} dials in a row and it lists no call for any of them; the recipient was not dialed again.`;
  const failed = await repo.failDialingRecipients(trx, [recipientId], {
    reason: 'provider_error',
    message,
    now: isoTimestamp(clock.now()),
  });
  return failed.length === 0 ? new Map<string, number>() : finishBatchesIfDone(trx, clock, [batchId]);
}

/**
 * A recipient's dial placed this call (answered, or found at the provider after a lost answer): the
 * recipient is `in_progress` with it, in `trx`, the transaction that stores the call. Its calls so far are
 * read unless `known` (the dialer's claimed row). False when it had been failed as interrupted meanwhile:
 * it keeps that final state but learns its call.
 */
export async function recipientTookCall(
  trx: Db,
  clock: Clock,
  batchId: string,
  recipientId: string,
  callId: string,
  known?: Pick<RecipientRow, 'call_ids'>,
): Promise<boolean> {
  const recipient = known ?? (await repo.findRecipient(trx, batchId, recipientId));
  if (!recipient) return false;
  const callIds = JSON.stringify([...(JSON.parse(recipient.call_ids) as string[]), callId]);
  return repo.recipientPlaced(trx, recipientId, callId, callIds, isoTimestamp(clock.now()));
}

/**
 * A recipient's dial could not be checked within the Idempotency-Key lifetime (the provider could not be
 * asked): it ends `interrupted`, as it may or may not have been called. In `trx`.
 */
export async function interruptDialing(
  trx: Db,
  clock: Clock,
  batchId: string,
  recipientId: string,
  message: string,
): Promise<FinishedBatches> {
  await repo.lockBatches(trx, [batchId]);
  const failed = await repo.failDialingRecipients(trx, [recipientId], { reason: 'interrupted', message, now: isoTimestamp(clock.now()) });
  return failed.length === 0 ? new Map() : finishBatchesIfDone(trx, clock, [batchId]);
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
    finished.map((batch, index) => ({
      accountId: batch.account_id,
      mode: batch.mode,
      type: 'batch.completed' as const,
      callId: null,
      data: views[index],
    })),
  );
  return new Map(finished.map((batch, index) => [batch.id, written[index]!.deliveryIds.length]));
}

/**
 * Queues again recipients whose claim's lease ended by `leaseEndedBy` with no dial recorded (their worker
 * stopped before asking the provider): the claim's counted attempt is given back. A cancelled batch's are
 * cancelled instead, which may finish it.
 */
export async function requeueUnasked(
  db: Db,
  clock: Clock,
  batchId: string,
  recipientIds: readonly string[],
  leaseEndedBy: string,
): Promise<{ readonly requeued: readonly string[]; readonly finished: FinishedBatches }> {
  return db.transaction().execute(async (trx) => {
    await repo.lockBatches(trx, [batchId]);
    const now = isoTimestamp(clock.now());
    const batch = await repo.findBatch(trx, batchId);
    const ids = await repo.expiredDialingOf(trx, recipientIds, leaseEndedBy);
    for (const id of ids) {
      if (batch?.status === 'cancelled') await repo.cancelDialingRecipient(trx, id, now);
      else await repo.requeueDialingRecipient(trx, id, now, now, false);
    }
    const finished =
      batch?.status === 'cancelled' && ids.length > 0 ? await finishBatchesIfDone(trx, clock, [batchId]) : new Map<string, number>();
    return { requeued: ids, finished };
  });
}
