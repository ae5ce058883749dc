/**
 * Looks at calls that have not ended yet and asks their provider how they stand. Each call row carries
 * `next_check_at`; a sweep claims due rows with a conditional update (so several processes never check one
 * call at the same moment) and records the outcome once. Because the schedule lives in the database, a
 * call whose process died is picked up by the next sweep after a restart.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { failureLogLevel, isDatabaseUnavailable } from '../../db/unavailable.js';
import type { CallRow } from '../../db/schema.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import * as repo from './calls.repository.js';
import type { CallOutcome } from '../providers/provider.interface.js';
import { recordOutcome, recordOutcomes } from './calls.service.js';

export interface CallMonitorOptions {
  readonly db: Db;
  readonly dialect: 'sqlite' | 'postgres';
  readonly clock: Clock;
  readonly providers: ProviderRegistry;
  readonly logger: FastifyBaseLogger;
  /** How often due calls are swept up. */
  readonly sweepIntervalMs?: number;
  /** How long a claimed check holds a call before another process may try it (after a crash). */
  readonly claimLeaseMs?: number;
  /** Called after a call's outcome was recorded with webhook deliveries to make. */
  readonly onCallEnded?: (callId: string) => void;
}

const defaultSweepIntervalMs = 1_000;
const defaultClaimLeaseMs = 30_000;
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
const maxTimerDelayMs = 60_000;
/**
 * Prompt looks that fall due within this many milliseconds share one timer and so one sweep: at a thousand
 * calls a second, a timer per call would claim one or two calls per statement and commit each ending alone.
 */
const wakeGranularityMs = 50;

interface Ended {
  readonly callId: string;
  readonly outcome: CallOutcome;
}

export class CallMonitor {
  /** One timer per `wakeGranularityMs` slot, keyed by the slot's end (ms since the epoch). */
  private readonly timers = new Map<number, NodeJS.Timeout>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopped = true;

  constructor(private readonly options: CallMonitorOptions) {}

  start(): void {
    this.stopped = false;
    const interval = this.options.sweepIntervalMs ?? defaultSweepIntervalMs;
    this.sweepTimer = setInterval(() => void this.sweep(), interval);
    this.sweepTimer.unref();
    void this.sweep();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await this.sweeping;
  }

  /** Asks for a look at `at`, sooner than the next sweep would (the simulator's end of call). */
  schedule(_callId: string, at: Date): void {
    if (this.stopped) return;
    const now = this.options.clock.now().getTime();
    // Far-off looks (reconciliation) are left to the sweep; timers are for prompt ends only.
    if (at.getTime() - now > maxTimerDelayMs) return;
    const slot = Math.ceil(at.getTime() / wakeGranularityMs) * wakeGranularityMs;
    if (this.timers.has(slot)) return;
    const timer = setTimeout(() => {
      this.timers.delete(slot);
      void this.sweep();
    }, Math.max(0, slot - now));
    timer.unref();
    this.timers.set(slot, timer);
  }

  /** One pass over the due calls; concurrent calls share the pass under way. */
  sweep(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!this.sweeping) {
      this.sweeping = this.sweepOnce()
        .catch((error: unknown) =>
          isDatabaseUnavailable(error)
            ? this.options.logger.warn({ err: error }, 'call monitor sweep failed: the database is unavailable; trying again at the next sweep')
            : this.options.logger.error({ err: error }, 'call monitor sweep failed'),
        )
        .finally(() => {
          this.sweeping = undefined;
        });
    }
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const { db, clock, dialect } = this.options;
    for (;;) {
      const now = clock.now();
      const lease = isoTimestamp(addMs(now, this.options.claimLeaseMs ?? defaultClaimLeaseMs));
      const due = await repo.claimDueCalls(db, dialect, isoTimestamp(now), lease, sweepBatchSize);
      const ended: Ended[] = [];
      let next = 0;
      const lane = async () => {
        while (!this.stopped && next < due.length) {
          const call = due[next++]!;
          await this.check(call)
            .then((outcome) => outcome && ended.push(outcome))
            .catch((error: unknown) =>
              this.options.logger.error({ err: error, callId: call.id }, 'call check failed; it is looked at again after its lease'),
            );
        }
      };
      await Promise.all(Array.from({ length: Math.min(checkConcurrency, due.length) }, lane));
      await this.record(ended);
      if (this.stopped || due.length < sweepBatchSize) return;
    }
  }

  /** Records the outcomes of one batch in one transaction; if that fails, each on its own. */
  private async record(ended: readonly Ended[]): Promise<void> {
    const { db, clock, logger } = this.options;
    let results: { ended: boolean; deliveries: number }[];
    try {
      results = await recordOutcomes(db, clock, ended);
    } catch (error) {
      logger.warn({ err: error, calls: ended.length }, 'recording a batch of call outcomes failed; recording them one by one');
      results = [];
      for (const item of ended) {
        results.push(
          await recordOutcome(db, clock, item.callId, item.outcome).catch((err: unknown) => {
            logger[failureLogLevel(err)]({ err, callId: item.callId }, 'recording a call outcome failed; it is looked at again after its lease');
            return { ended: false, deliveries: 0 };
          }),
        );
      }
    }
    ended.forEach((item, index) => {
      if (results[index]!.ended) logger.info({ callId: item.callId, status: item.outcome.status }, 'call ended');
    });
    // Only events with deliveries give the dispatcher something to do; one wake-up serves the batch.
    const withDeliveries = ended.find((_, index) => results[index]!.deliveries > 0);
    if (withDeliveries) this.options.onCallEnded?.(withDeliveries.callId);
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
    return { callId, outcome: result.value.outcome };
  }
}
