/**
 * The dial job: resolves the dials whose answer was lost. Each pass claims the open dials that are due
 * (`checking` ones whose next look has come, `asking` ones whose asker died) under a lease, so several
 * workers never look at one dial at once, and asks each one's provider for it (dials.service
 * `lookForDial`). It also applies the provider reports that came before their call was stored (held
 * outcomes), once the call is there, and drops old ones that never found a call. The schedule lives in the
 * database: after a crash, any worker takes up where the dead one stopped. A dial's origin (an API request's
 * Idempotency-Key, a batch's recipient) learns how it was resolved through its port, of those the container
 * hands in (`origins`), by the kind the dial recorded.
 */
import { failureLogLevel } from '../../db/unavailable.js';
import type { JobContext, PassResult } from '../../jobs/job-runner.js';
import { WorkerJob, type WorkerJobOptions } from '../../jobs/worker-job.js';
import { addMs, isoTimestamp } from '../../lib/clock.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { CallRow } from './calls.tables.js';
import { recordOutcome } from './calls.service.js';
import { originKindOf, type DialOriginPorts } from './dial-origin.js';
import * as repo from './dials.repository.js';
import { claimDueDials, lookForDial, outcomeFromJson, type DialResult } from './dials.service.js';

export interface DialJobOptions extends WorkerJobOptions {
  readonly providers: ProviderRegistry;
  /** The port of each kind of origin: how a resolved dial reaches what asked for it. */
  readonly origins: DialOriginPorts;
  /** Told of each call a search found (the call monitor's first look). */
  readonly onCallPlaced?: (callId: string, checkAt: Date) => void;
  /** Told when outcomes were recorded with deliveries to make, or a batch changed (the workers' wake-up). */
  readonly onEvents?: () => void;
  readonly onResolved?: (result: DialResult) => void;
  readonly observeEnded?: (call: CallRow) => void;
}

const dialsPerPass = 50;
/** Provider searches at once: each is a request or a few to the provider. */
const lookConcurrency = 4;
const defaultLeaseMs = 60_000;
const heldPerPass = 100;
/** A held report whose call never came is dropped after this long: it was not a call of callgate's. */
const heldOutcomeLifetimeMs = 48 * 60 * 60_000;
const purgeEveryMs = 10 * 60_000;

export class DialJob extends WorkerJob<DialJobOptions> {
  private nextPurgeAt = 0;

  constructor(options: DialJobOptions) {
    super({ name: 'dial-checker', label: 'dial check pass' }, options);
  }

  /** A look sooner than the next sweep (a dial whose answer was just lost is due in a second or so). */
  wakeAt(at: Date): void {
    this.handle.wakeAt(at);
  }

  async runOnce({ now, stopping }: JobContext): Promise<PassResult> {
    const { db, clock, logger } = this.options;
    const due = await claimDueDials(db, clock, this.options.leaseMs ?? defaultLeaseMs, dialsPerPass);
    let next = 0;
    const lane = async () => {
      while (!stopping() && next < due.length) {
        const dial = due[next++]!;
        try {
          const result = await lookForDial(
            {
              db,
              clock,
              providers: this.options.providers,
              origins: this.options.origins,
              ...(this.options.onCallPlaced ? { onCallPlaced: this.options.onCallPlaced } : {}),
            },
            dial,
          );
          if (result) {
            logger.info({ dialId: dial.id, result }, 'a dial whose answer was lost is resolved');
            this.options.onResolved?.(result);
            // A recipient to dial again, a batch finished (its event to deliver): the workers look now.
            if (this.options.origins[originKindOf(dial)].wakesWorkers) this.options.onEvents?.();
          }
        } catch (error) {
          logger[failureLogLevel(error)]({ err: error, dialId: dial.id }, 'a dial check failed; it is looked at again after its lease');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(lookConcurrency, due.length) }, lane));
    await this.applyHeldOutcomes();
    if (now.getTime() >= this.nextPurgeAt) {
      this.nextPurgeAt = now.getTime() + purgeEveryMs;
      await repo.purgeHeldOutcomes(db, isoTimestamp(addMs(now, -heldOutcomeLifetimeMs)), 1_000);
    }
    // The next look due soonest is found by the sweep; a pass that claimed a full page goes on at once.
    return { more: due.length === dialsPerPass, claimed: due.length };
  }

  /** Records the held reports whose call is stored now (found after a lost answer, or stored late). */
  private async applyHeldOutcomes(): Promise<void> {
    const { db, clock, logger } = this.options;
    const ready = await repo.heldOutcomesWithCall(db, heldPerPass);
    let deliveries = 0;
    for (const held of ready) {
      const recorded = await recordOutcome(db, clock, held.call_id, outcomeFromJson(held.outcome), this.options.observeEnded);
      await repo.deleteHeldOutcome(db, held.provider, held.conversation_id);
      deliveries += recorded.deliveries;
      if (recorded.ended) logger.info({ callId: held.call_id }, 'a provider report that came before its call was stored is recorded');
    }
    if (deliveries > 0 || ready.length > 0) this.options.onEvents?.();
  }
}
