/**
 * Looks at calls that have not ended yet and asks their provider how they stand. Each call row carries
 * `next_check_at`; a sweep claims due rows with a conditional update (so several processes never check one
 * call at the same moment) and records the outcome once. Because the schedule lives in the database, a
 * call whose process died is picked up by the next sweep after a restart.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import type { CallRow } from '../../db/schema.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import * as repo from './calls.repository.js';
import { recordOutcome } from './calls.service.js';

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
/** Wait before asking a provider again after it failed to answer. */
const providerRetryMs = 30_000;
const sweepBatchSize = 100;
/** Calls checked at once: provider look-ups and PostgreSQL round trips overlap; SQLite serialises anyway. */
const checkConcurrency = 8;
const maxTimerDelayMs = 60_000;

export class CallMonitor {
  private readonly timers = new Set<NodeJS.Timeout>();
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
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.sweeping;
  }

  /** Asks for a look at `at`, sooner than the next sweep would (the simulator's end of call). */
  schedule(_callId: string, at: Date): void {
    if (this.stopped) return;
    const delay = Math.max(0, at.getTime() - this.options.clock.now().getTime());
    // Far-off looks (reconciliation) are left to the sweep; timers are for prompt ends only.
    if (delay > maxTimerDelayMs) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.sweep();
    }, delay);
    timer.unref();
    this.timers.add(timer);
  }

  /** One pass over the due calls; concurrent calls share the pass under way. */
  sweep(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (!this.sweeping) {
      this.sweeping = this.sweepOnce()
        .catch((error: unknown) => this.options.logger.error({ err: error }, 'call monitor sweep failed'))
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
      let next = 0;
      const lane = async () => {
        while (!this.stopped && next < due.length) {
          const call = due[next++]!;
          await this.check(call).catch((error: unknown) =>
            this.options.logger.error({ err: error, callId: call.id }, 'call check failed; it is looked at again after its lease'),
          );
        }
      };
      await Promise.all(Array.from({ length: Math.min(checkConcurrency, due.length) }, lane));
      if (this.stopped || due.length < sweepBatchSize) return;
    }
  }

  private async check(call: CallRow): Promise<void> {
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
      await repo.setNextCheck(db, callId, isoTimestamp(addMs(clock.now(), providerRetryMs)));
      return;
    }
    if (result.value.state === 'running') {
      await repo.setNextCheck(db, callId, isoTimestamp(result.value.checkAgainAt));
      this.schedule(callId, result.value.checkAgainAt);
      return;
    }
    const recorded = await recordOutcome(db, clock, callId, result.value.outcome);
    if (recorded.ended) logger.info({ callId, status: result.value.outcome.status }, 'call ended');
    // Only an event with deliveries gives the dispatcher something to do.
    if (recorded.deliveries > 0) this.options.onCallEnded?.(callId);
  }
}
