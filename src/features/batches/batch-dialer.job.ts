/**
 * The batch dialer: a job of the worker's runner that places the calls of batches, never more at once per
 * batch than its max_concurrency, each at most once.
 *
 * - Never over the limit: a pass claims a batch's recipients in one transaction that holds the batch's claim
 *   and its row (a batch another worker is claiming is skipped, so two workers never count the same free
 *   slots; see lockDueBatch) and counts those
 *   `dialing` or `in_progress` before it takes the rest; a slot frees only when a call's outcome is
 *   recorded (calls.service), or a dial fails.
 * - Exactly once: a recipient is committed `dialing`, under a lease, then dialed by the one dial driver
 *   (calls/dial-driver.ts) as POST /v1/calls is, the recipient its origin (recipient-origin.ts): its dial is
 *   recorded (holding it) before the provider is asked. A dial whose answer is lost, or whose worker dies,
 *   is resolved by the dial job (calls/dials.job.ts): the call found is the recipient's, or the recipient is
 *   dialed again. A recipient whose lease ends without a dial was never asked for: it is queued again.
 * - Each placed recipient is an ordinary call, stored with its recipient's change in one transaction, then
 *   watched by the call monitor like any call.
 * A pass runs on its interval, on the delivery notifier's wake-ups (a new or resumed batch, NOTIFY on
 * PostgreSQL), when a batch's call ends (the call monitor), and when a backoff ends.
 */
import { failureLogLevel } from '../../db/unavailable.js';
import type { AgentRow } from '../agents/agents.tables.js';
import type { JobContext, PassResult } from '../../jobs/job-runner.js';
import { WorkerJob, type WorkerJobOptions } from '../../jobs/worker-job.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import { findAgent } from '../agents/agents.service.js';
import type { CallsDeps } from '../calls/calls.service.js';
import { dial } from '../calls/dial-driver.js';
import type { ProviderFailure } from '../providers/provider.interface.js';
import { isSuppressed } from '../suppressions/suppressions.service.js';
import { accountsAtLimit, lockFreeSlots, releaseSlots, takeSlots } from '../concurrency/concurrency.service.js';
import * as dialerRepo from './batch-dialer.repository.js';
import {
  failDialing,
  finishLeftBatches,
  holdOutsideWindow,
  requeueDialing,
  requeueUnasked,
  type FinishedBatches,
} from './batch-progress.service.js';
import { deferralDelayMs } from './deferral.js';
import { liveDispatchers } from '../webhook-delivery/deliveries.service.js';
import type { BatchRow, RecipientRow } from './batches.tables.js';
import { recipientOrigin } from './recipient-origin.js';

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
  /**
   * Worker processes live (each runs a dispatcher and a dialer; read once per interval). A claim takes its
   * part of a batch's free slots, not all: the dialer that claims first would otherwise keep them, as the
   * calls it places end in its own call monitor, whose wake-up reaches it before any other.
   */
  private workers = 1;

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
      await this.finishLeftBatches();
      this.workers = await liveDispatchers(this.options.db, isoTimestamp(now));
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
        const dialing = this.dialRecipient(claim.batch, agent, recipient);
        // Its account slot goes once the call is stored (the call holds the place then) or was not placed.
        this.track(claim.slotsTaken ? dialing.finally(() => releaseSlots(this.options.db, [recipient.id])) : dialing);
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
        const claimed = await dialerRepo.claimRecipients(trx, batch, at, isoTimestamp(leaseUntil), cap, this.workers);
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
   * Places one recipient's call and stores it with the recipient's change, through the dial driver. An answer
   * that is lost leaves the recipient to the dial job, which finds the call or dials it again, never both.
   */
  private async dialRecipient(batch: BatchRow, agent: AgentRow | undefined, recipient: RecipientRow): Promise<void> {
    const { calls, logger } = this.options;
    // Checked now, not when the batch was made: a number suppressed since then is not called either.
    if (await isSuppressed(this.options.db, batch.account_id, recipient.to_number)) return this.notDialable(batch, recipient, 'suppressed');
    if (!agent) {
      const failure = { kind: 'rejected', message: `The agent ${batch.agent_id} is no longer in this account.`, retryable: false } as const;
      return this.notPlaced(batch, recipient, failure);
    }
    const attempt = await dial(calls, recipientOrigin(calls.clock, batch, recipient), agent, {
      to: recipient.to_number,
      metadata: recipient.metadata === null ? null : (JSON.parse(recipient.metadata) as Record<string, string>),
    });
    if (attempt.kind === 'refused') return this.notPlaced(batch, recipient, attempt.failure);
    if (attempt.kind === 'lost') {
      logger.warn(
        { batchId: batch.id, recipientId: recipient.id, dialId: attempt.dial.id },
        'a batch dial lost its answer; looking for the call',
      );
      return;
    }
    // While the database is away the call is stored once it is back, and the recipient's slot waits for it.
    const taken = attempt.kind === 'storing' ? await attempt.taken : attempt.taken;
    if (taken === false)
      logger.warn(
        { batchId: batch.id, recipientId: recipient.id, callId: attempt.call.id },
        'a batch call was placed after its dialing lease ended; its recipient stays interrupted',
      );
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

  /** Finishes the batches whose last call ended in a process that stopped before it could finish them. */
  private async finishLeftBatches(): Promise<void> {
    this.afterFinishing(await finishLeftBatches(this.options.db, this.options.clock, expiredPerPass));
  }

  private afterFinishing(finished: FinishedBatches): void {
    if ([...finished.values()].some((deliveries) => deliveries > 0)) this.options.onEvents?.();
  }
}
