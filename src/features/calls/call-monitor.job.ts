/**
 * Looks at calls that have not ended yet and asks their provider how they stand. Each call row carries
 * `next_check_at`; a sweep (a pass of the worker's job runner) claims due rows with a conditional update
 * (so several processes never check one call at the same moment) and records the outcome once. Because
 * the schedule lives in the database, a call whose process died is picked up by the next sweep after a
 * restart.
 */
import { failureLogLevel } from '../../db/unavailable.js';
import type { JobContext, PassResult } from '../../jobs/job-runner.js';
import { WorkerJob, type WorkerJobOptions } from '../../jobs/worker-job.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import type { Metrics } from '../metrics/metrics.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import * as repo from './calls.repository.js';
import type { CallOutcome, CallReference } from '../providers/provider.interface.js';
import { recordOutcome, recordOutcomes } from './calls.service.js';
import type { CallRow } from './calls.tables.js';

export interface CallMonitorOptions extends WorkerJobOptions {
  readonly providers: ProviderRegistry;
  /** Called after calls' outcomes were recorded with webhook deliveries to make (the dispatcher's wake-up). */
  readonly onEvents?: () => void;
  /** Called after a batch's call ended: its batch has a free slot (the dialer's wake-up). */
  readonly onBatchCallEnded?: () => void;
  /** Counts each call ended. */
  readonly metrics?: Metrics;
}

const defaultLeaseMs = 30_000;
/**
 * Wait before asking a provider again after it failed to answer: a tenth of the call's age, from 30 s to
 * 30 min, so a provider outage of hours is not asked about every 30 s for each open call.
 */
export function providerRetryDelayMs(callAgeMs: number): number {
  return Math.min(30 * 60_000, Math.max(30_000, Math.round(callAgeMs / 10)));
}
const sweepBatchSize = 100;
/** Calls checked at once: provider look-ups and PostgreSQL round trips overlap; SQLite serialises anyway. */
const checkConcurrency = 8;

interface Ended {
  readonly callId: string;
  readonly outcome: CallOutcome;
  /** The call's batch, if a batch placed it: its end frees a slot of that batch. */
  readonly batchId: string | null;
}

/** A job of the worker's runner: each pass claims a batch of due calls, checks them and records the ends. */
export class CallMonitor extends WorkerJob<CallMonitorOptions> {
  private readonly observeEnded: ((call: CallRow) => void) | undefined;

  constructor(options: CallMonitorOptions) {
    super({ name: 'call-monitor', label: 'call monitor sweep' }, options);
    const { metrics } = options;
    this.observeEnded = metrics ? (call) => metrics.callEnded(call) : undefined;
  }

  /** Asks for a look at `at`, sooner than the next sweep would (the simulator's end of call). */
  schedule(_callId: string, at: Date): void {
    this.handle.wakeAt(at);
  }

  async runOnce({ now, stopping }: JobContext): Promise<PassResult> {
    const { db } = this.options;
    const lease = isoTimestamp(addMs(now, this.options.leaseMs ?? defaultLeaseMs));
    const due = await repo.claimDueCalls(db, isoTimestamp(now), lease, sweepBatchSize);
    const ended: Ended[] = [];
    let next = 0;
    const lane = async () => {
      while (!stopping() && next < due.length) {
        const call = due[next++]!;
        await this.check(call)
          .then((outcome) => outcome && ended.push(outcome))
          .catch((error: unknown) =>
            this.options.logger[failureLogLevel(error)](
              { err: error, callId: call.id },
              'call check failed; it is looked at again after its lease',
            ),
          );
      }
    };
    await Promise.all(Array.from({ length: Math.min(checkConcurrency, due.length) }, lane));
    await this.record(ended);
    return { more: due.length === sweepBatchSize, claimed: due.length };
  }

  /** Records the outcomes of one batch in one transaction; if that fails, each on its own. */
  private async record(ended: readonly Ended[]): Promise<void> {
    const { db, clock, logger } = this.options;
    let results: { ended: boolean; deliveries: number }[];
    try {
      results = await recordOutcomes(db, clock, ended, this.observeEnded);
    } catch (error) {
      logger.warn({ err: error, calls: ended.length }, 'recording a batch of call outcomes failed; recording them one by one');
      results = [];
      for (const item of ended) {
        results.push(
          await recordOutcome(db, clock, item.callId, item.outcome, this.observeEnded).catch((err: unknown) => {
            logger[failureLogLevel(err)](
              { err, callId: item.callId },
              'recording a call outcome failed; it is looked at again after its lease',
            );
            return { ended: false, deliveries: 0 };
          }),
        );
      }
    }
    ended.forEach((item, index) => {
      if (results[index]!.ended) logger.info({ callId: item.callId, status: item.outcome.status }, 'call ended');
    });
    // Only events with deliveries give the dispatcher something to do; one wake-up serves the batch.
    if (results.some((result) => result.deliveries > 0)) this.options.onEvents?.();
    if (ended.some((item, index) => item.batchId !== null && results[index]!.ended)) this.options.onBatchCallEnded?.();
  }

  /** Asks the provider how a call stands: its outcome when it has ended, otherwise its next look is set. */
  private async check(call: CallRow): Promise<Ended | undefined> {
    const { db, clock, providers, logger } = this.options;
    const callId = call.id;
    const provider = providers.byName(call.provider);
    const result = await provider.checkCall({
      conversationId: call.provider_conversation_id,
      to: call.to_number,
      createdAt: new Date(call.created_at),
      metadata: call.metadata === null ? null : (JSON.parse(call.metadata) as CallReference['metadata']),
      cancelRequestedAt: call.cancel_requested_at === null ? null : new Date(call.cancel_requested_at),
    });
    if (!result.ok) {
      logger.warn({ callId, failure: result.error.kind }, 'provider could not tell how a call stands; will ask again');
      const now = clock.now();
      const delay = providerRetryDelayMs(now.getTime() - Date.parse(call.created_at));
      await repo.setNextCheck(db, callId, isoTimestamp(addMs(now, delay)));
      return undefined;
    }
    if (result.value.state === 'running') {
      await repo.setNextCheck(db, callId, isoTimestamp(result.value.checkAgainAt));
      this.schedule(callId, result.value.checkAgainAt);
      return undefined;
    }
    return { callId, outcome: result.value.outcome, batchId: call.batch_id };
  }
}
