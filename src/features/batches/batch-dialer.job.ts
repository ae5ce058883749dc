/**
 * The batch dialer: a job of the worker's runner that places the calls of batches, never more at once per
 * batch than its max_concurrency, each at most once.
 *
 * - Never over the limit: a pass claims a batch's recipients in one transaction that locks the batch's row
 *   (SKIP LOCKED on PostgreSQL, so two workers never count the same free slots) and counts those
 *   `dialing` or `in_progress` before it takes the rest; a slot frees only when a call's outcome is
 *   recorded (calls.service), or a dial fails.
 * - Exactly once: a recipient is committed `dialing`, under a lease, and its dial is recorded (holding
 *   it) before the provider is asked. A dial whose answer is lost, or whose worker dies, is resolved by the
 *   dial job (calls/dials.job.ts): the call found is the recipient's, or the recipient is dialed again. A
 *   recipient whose lease ends without a dial was never asked for: it is queued again.
 * - Each placed recipient is an ordinary call (calls.service placeCall), stored with its recipient's
 *   change in one transaction, then watched by the call monitor like any call.
 * A pass runs on its interval, on the delivery notifier's wake-ups (a new or resumed batch, NOTIFY on
 * PostgreSQL), when a batch's call ends (the call monitor), and when a backoff ends.
 */
import { failureLogLevel, isDatabaseUnavailable, retryWhileUnavailable } from '../../db/unavailable.js';
import type { AgentRow } from '../agents/agents.tables.js';
import type { CallRow } from '../calls/calls.tables.js';
import type { JobContext, PassResult } from '../../jobs/job-runner.js';
import { WorkerJob, type WorkerJobOptions } from '../../jobs/worker-job.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { findAgent } from '../agents/agents.service.js';
import { findCallById, getCall, placeCall, storeCall, type CallsDeps } from '../calls/calls.service.js';
import { beginDial, dialLost, dialPlaced, dialRefused, lostAnswer } from '../calls/dials.service.js';
import type { DialRow } from '../calls/dials.tables.js';
import { mayHavePlaced, type ProviderFailure } from '../providers/provider.interface.js';
import { isSuppressed } from '../suppressions/suppressions.service.js';
import { accountsAtLimit, handOverSlots, lockFreeSlots, releaseSlots, takeSlots } from '../concurrency/concurrency.service.js';
import * as dialerRepo from './batch-dialer.repository.js';
import * as batchesRepo from './batches.repository.js';
import { failDialing, holdOutsideWindow, requeueDialing, requeueUnasked, type FinishedBatches } from './batch-progress.service.js';
import { deferralDelayMs } from './deferral.js';
import type { BatchRow, RecipientRow } from './batches.tables.js';

export interface BatchDialerOptions extends WorkerJobOptions {
  /** How calls are placed and handed to the call monitor: the same path as POST /v1/calls. */
  readonly calls: CallsDeps;
  /** How long a dial may take before its worker is taken for dead; longer than the provider's timeout. */
  readonly leaseMs: number;
  /** Called after `batch.completed` events were written with deliveries to make (the dispatcher's wake-up). */
  readonly onEvents?: () => void;
  /** Jitter source of the backoff after a 429. */
  readonly random?: () => number;
}

const batchesPerPass = 20;
/** Claims of one batch in one pass while some of those claimed must wait for their calling window. */
const claimRoundsMax = 5;
const expiredPerPass = 100;
export class BatchDialer extends WorkerJob<BatchDialerOptions> {
  private readonly dials = new Set<Promise<void>>();
  private nextLeaseSweepAt = 0;

  constructor(options: BatchDialerOptions) {
    super({ name: 'batch-dialer', label: 'batch dialer pass' }, options);
  }

  /** Resolves when no dial of this worker is under way; for tests and the benchmark. */
  override async idle(): Promise<void> {
    while (this.dials.size > 0) await Promise.allSettled([...this.dials]);
  }

  /** A shutdown lets dials under way finish (and store their calls), up to its deadline. */
  pending(): Promise<unknown> {
    return Promise.allSettled([...this.dials]);
  }

  async runOnce({ now, stopping }: JobContext): Promise<PassResult> {
    // Leases end on the scale of a minute: a look per interval is enough, not one per wake-up.
    if (now.getTime() >= this.nextLeaseSweepAt) {
      this.nextLeaseSweepAt = now.getTime() + this.intervalMs;
      await this.failInterrupted(now);
    }
    const full = await accountsAtLimit(this.options.db, now);
    const due = await dialerRepo.dueBatches(this.options.db, isoTimestamp(now), batchesPerPass, full);
    // The account's free slots are shared between its batches of this pass: each claims its part of what is
    // left (the fewest under way first, see dueBatches), so a large batch never takes every slot from a small one.
    const sharing = new Map<string, number>();
    const sharer = (batch: BatchRow) => `${batch.account_id} ${batch.mode}`;
    for (const batch of due) sharing.set(sharer(batch), (sharing.get(sharer(batch)) ?? 0) + 1);
    let claimedAny = false;
    let slotsLeft = false;
    for (const batch of due) {
      if (stopping()) break;
      const sharers = sharing.get(sharer(batch))!;
      sharing.set(sharer(batch), sharers - 1);
      // Read before the claim: a claimed recipient must reach the provider, or it ends interrupted.
      const agent = await findAgent(this.options.db, batch.account_id, batch.agent_id);
      const claim = await this.claim(batch.id, now, sharers);
      if (claim) this.afterFinishing(claim.finished);
      if (!claim || claim.recipients.length === 0) continue;
      claimedAny = true;
      slotsLeft ||= claim.slotsLeft;
      this.options.logger.debug({ batchId: batch.id, recipients: claim.recipients.length }, 'batch recipients claimed');
      for (const recipient of claim.recipients) {
        const dial = this.dial(claim.batch, agent, recipient);
        // Its account slot goes once the call is stored (the call holds the place then) or was not placed.
        this.track(claim.slotsTaken ? dial.finally(() => releaseSlots(this.options.db, [recipient.id])) : dial);
      }
    }
    // A batch held to its part while its account had more free slots: another pass gives what the others of
    // the account left unused to whoever can use them.
    return { more: claimedAny && (slotsLeft || due.length === batchesPerPass) };
  }

  /**
   * Claims as many due recipients as the batch has free slots, under its lock, and no more than its part of
   * its account's free slots (max_concurrent_calls, under the account's lock; `sharers` batches share them): their account slots are taken in the same
   * transaction, for as long as their dialing lease. Those whose calling window is closed go back to the
   * queue until it opens (holdOutsideWindow), and their slots to the next due ones.
   */
  private async claim(
    batchId: string,
    now: Date,
    /** Batches of its account in this pass still to claim, this one included: it takes its part of the free slots. */
    sharers = 1,
  ): Promise<
    { batch: BatchRow; recipients: RecipientRow[]; finished: FinishedBatches; slotsTaken: boolean; slotsLeft: boolean } | undefined
  > {
    const { db, clock } = this.options;
    const at = isoTimestamp(now);
    return db.transaction().execute(async (trx) => {
      const batch = await dialerRepo.lockDueBatch(trx, batchId, at);
      if (!batch) return undefined;
      // A batch of an account at its limit waits, and is dialed again once one of the account's calls ended.
      const account = await lockFreeSlots(trx, batch.account_id, batch.mode, now);
      if (account.free <= 0) return undefined;
      const share = Math.ceil(account.free / sharers);
      // Each claim counts the batch's free slots and takes that many (at most the account's), in one statement
      // under the batch's lock; those held back for their window are queued again in this transaction, so the
      // next round sees their slots free.
      const leaseUntil = addMs(now, this.options.leaseMs);
      const recipients: RecipientRow[] = [];
      let finished: FinishedBatches = new Map();
      for (let round = 0; round < claimRoundsMax && recipients.length < share; round++) {
        const cap = share - recipients.length;
        const claimed = await dialerRepo.claimRecipients(trx, batch, at, isoTimestamp(leaseUntil), cap);
        if (claimed.length === 0) break;
        const held = await holdOutsideWindow(trx, clock, batch, claimed, now);
        recipients.push(...held.dial);
        if (held.finished.size > 0) finished = held.finished;
        if (held.dial.length === claimed.length) break;
      }
      if (recipients.length === 0 && finished.size === 0) return undefined;
      const slotsTaken = account.limit !== null && recipients.length > 0;
      if (slotsTaken)
        await takeSlots(
          trx,
          batch.account_id,
          batch.mode,
          recipients.map((recipient) => recipient.id),
          now,
          leaseUntil,
        );
      if (batch.status === 'scheduled') {
        await trx
          .updateTable('batches')
          .set({ status: 'running', updated_at: at })
          .where('id', '=', batch.id)
          .where('status', '=', 'scheduled')
          .execute();
      }
      return { batch, recipients, finished, slotsTaken, slotsLeft: recipients.length === share && share < account.free };
    });
  }

  private track(dial: Promise<void>): void {
    const tracked = dial
      .catch((error: unknown) =>
        this.options.logger[failureLogLevel(error)](
          { err: error },
          'dialing a batch recipient failed; it ends interrupted after its lease',
        ),
      )
      .finally(() => this.dials.delete(tracked));
    this.dials.add(tracked);
  }

  /**
   * Places one recipient's call and stores it with the recipient's change. The dial is recorded first (and
   * holds the recipient): an answer that is lost leaves it to the dial job, which finds the call or dials
   * the recipient again, never both.
   */
  private async dial(batch: BatchRow, agent: AgentRow | undefined, recipient: RecipientRow): Promise<void> {
    const { calls, logger } = this.options;
    // Checked now, not when the batch was made: a number suppressed since then is not called either.
    if (await isSuppressed(this.options.db, batch.account_id, recipient.to_number)) return this.notDialable(batch, recipient, 'suppressed');
    if (!agent) {
      const failure = { kind: 'rejected', message: `The agent ${batch.agent_id} is no longer in this account.`, retryable: false } as const;
      return this.notPlaced(batch, recipient, failure);
    }
    const apiKey = { id: batch.api_key_id, account_id: batch.account_id, mode: batch.mode };
    const provider = calls.providers.forCall(agent, batch.mode);
    const dial = await beginDial(
      calls,
      { apiKey, batch: { id: batch.id, reference: recipient.reference, recipientId: recipient.id } },
      agent,
      provider.name,
      { to: recipient.to_number, metadata: recipient.metadata },
    );
    const placed = await placeCall(calls, { apiKey, batch: { id: batch.id, reference: recipient.reference } }, agent, {
      to: recipient.to_number,
      metadata: recipient.metadata === null ? null : (JSON.parse(recipient.metadata) as Record<string, string>),
      dialId: dial.id,
    });
    if (!placed.ok) {
      if (mayHavePlaced(placed.failure)) {
        // The recipient stays `dialing`, held by its dial, until the dial job knows whether it was called.
        await dialLost(calls.db, calls.clock, dial, placed.failure, lostAnswer(dial, placed.failure, false));
        calls.onDialLost?.();
        logger.warn(
          { batchId: batch.id, recipientId: recipient.id, dialId: dial.id },
          'a batch dial lost its answer; looking for the call',
        );
        return;
      }
      await dialRefused(calls.db, calls.clock, dial, placed.failure);
      return this.notPlaced(batch, recipient, placed.failure);
    }
    const stored = await this.store(recipient, placed.row, dial);
    if (stored === undefined) return;
    if (!stored)
      logger.warn(
        { batchId: batch.id, recipientId: recipient.id, callId: placed.row.id },
        'a batch call was placed after its dialing lease ended; its recipient stays interrupted',
      );
    calls.onCallPlaced?.(placed.row.id, placed.firstCheckAt);
  }

  /**
   * Stores the placed call and marks its recipient `in_progress`, in one transaction. While the database is
   * away it tries again until it answers (the call exists at the provider: its outcome must not be lost).
   * Returns whether the recipient took the call (false: it had been failed as interrupted meanwhile), or
   * undefined when it could not be stored at all (or the dial job stored it first).
   */
  private async store(recipient: RecipientRow, row: CallRow, dial: DialRow): Promise<boolean | undefined> {
    const { db, clock, logger } = this.options;
    const store = () =>
      db.transaction().execute(async (trx) => {
        // The dial job found this call first (its answer came after the dial was taken for lost): it is stored.
        if (!(await dialPlaced(trx, clock, dial, row.id)) && (await findCallById(trx, row.id))) return undefined;
        await storeCall(trx, row);
        // The stored call holds the account's place from now on: its recipient's slot goes in the same commit,
        // or a claim of this pass in between would count the call twice and leave a free slot unused.
        await handOverSlots(trx, [recipient.id]);
        const callIds = JSON.stringify([...(JSON.parse(recipient.call_ids) as string[]), row.id]);
        return batchesRepo.recipientPlaced(trx, recipient.id, row.id, callIds, isoTimestamp(clock.now()));
      });
    try {
      return await store();
    } catch (error) {
      if (!isDatabaseUnavailable(error)) throw error;
      let placed: boolean | undefined = false;
      await retryWhileUnavailable(
        async () => {
          // A first attempt may have committed just before its connection dropped.
          placed = (await getCall(db, row.account_id, row.id)) ? true : await store();
        },
        {
          onUnavailable: () => logger.warn({ callId: row.id }, 'the database is still unavailable; storing a placed batch call again soon'),
        },
      );
      return placed;
    }
  }

  private async notPlaced(batch: BatchRow, recipient: RecipientRow, failure: ProviderFailure): Promise<void> {
    const { db, clock, logger } = this.options;
    if (failure.kind === 'unavailable') {
      const now = clock.now();
      const next = addMs(now, deferralDelayMs(recipient.deferrals, failure, this.options.random ?? Math.random));
      const { cancelled, finished } = await requeueDialing(db, clock, batch.id, recipient.id, isoTimestamp(next));
      if (cancelled) return this.afterFinishing(finished);
      logger.info(
        { batchId: batch.id, recipientId: recipient.id, retryAt: isoTimestamp(next) },
        'the provider cannot take a batch call now; it is queued again',
      );
      this.handle.wakeAt(next);
      return;
    }
    const { finished } = await failDialing(db, clock, batch.id, [recipient.id], { reason: 'provider_error', message: failure.message });
    logger.warn({ batchId: batch.id, recipientId: recipient.id, reason: 'provider_error' }, 'a batch recipient failed at the provider');
    this.afterFinishing(finished);
    this.wake();
  }

  /** Fails a recipient that is not to be called at all; the provider is never asked. */
  private async notDialable(batch: BatchRow, recipient: RecipientRow, reason: 'suppressed'): Promise<void> {
    const message = "The number is on the account's suppression list; it was not called.";
    const { finished } = await failDialing(this.options.db, this.options.clock, batch.id, [recipient.id], {
      reason,
      message,
      notDialed: true,
    });
    this.options.logger.info({ batchId: batch.id, recipientId: recipient.id, reason }, 'a batch recipient was not called');
    this.afterFinishing(finished);
    this.wake();
  }

  /**
   * Queues again the recipients whose claim's lease ran out: their worker stopped before it recorded a dial
   * (a recorded dial holds its recipient until it is known), so the provider was never asked for them.
   */
  private async failInterrupted(now: Date): Promise<void> {
    const at = isoTimestamp(now);
    const expired = await dialerRepo.expiredDialing(this.options.db, at, expiredPerPass);
    const byBatch = new Map<string, string[]>();
    for (const { id, batch_id } of expired) byBatch.set(batch_id, [...(byBatch.get(batch_id) ?? []), id]);
    for (const [batchId, ids] of byBatch) {
      const { requeued, finished } = await requeueUnasked(this.options.db, this.options.clock, batchId, ids, at);
      if (requeued.length > 0)
        this.options.logger.warn({ batchId, recipients: requeued }, 'batch recipients claimed by a worker that stopped are queued again');
      this.afterFinishing(finished);
    }
    if (expired.length > 0) this.wake();
  }

  private afterFinishing(finished: FinishedBatches): void {
    if ([...finished.values()].some((deliveries) => deliveries > 0)) this.options.onEvents?.();
  }
}
