/**
 * The one shape of a worker loop that claims rows: the batch dialer, the call monitor and the webhook
 * dispatcher, each in its feature as `<name>.job.ts`. Each is a `Job` of the worker's runner: a name (the
 * `job` label of the job metrics), a pass over the rows that are due (`runOnce`), run on the sweep interval
 * (`sweepIntervalMs`), on a wake-up signal (`wakeOn`) and when asked (`wake`, `pass`); rows claimed under a
 * lease (`leaseMs`) that another worker may take once it ends, so a crash loses nothing; and a shutdown
 * bounded by the runner (`pending`, `handBack`). The purges are `Job`s too, made by `retentionJob` or
 * `periodicJob`: they claim nothing and keep no state, so a function is their whole shape.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import type { Job, JobContext, JobHandle, JobRunner, PassResult, WakeSignal } from './job-runner.js';

/** What every worker loop is given; each adds its own below these. */
export interface WorkerJobOptions {
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: FastifyBaseLogger;
  /** The worker's job runner, which runs the passes. */
  readonly runner: JobRunner;
  /** Runs a pass on each signal (the delivery notifier: NOTIFY on PostgreSQL, in-process on SQLite). */
  readonly wakeOn?: WakeSignal;
  /** Passes run at least this often: the sweep for rows that came due and leases a dead worker left. */
  readonly sweepIntervalMs?: number;
  /** How long a claim holds its row before another worker may take it (after a crash). */
  readonly leaseMs?: number;
}

const defaultSweepIntervalMs = 1_000;

export abstract class WorkerJob<Options extends WorkerJobOptions> implements Job {
  readonly name: string;
  /** Its log lines say "<label> failed". */
  readonly label: string;
  readonly intervalMs: number;
  protected readonly options: Options;
  protected readonly handle: JobHandle;

  /** Adds the job to `options.runner`, which starts it with the worker. */
  constructor(identity: { readonly name: string; readonly label: string }, options: Options) {
    this.name = identity.name;
    this.label = identity.label;
    this.options = options;
    this.intervalMs = options.sweepIntervalMs ?? defaultSweepIntervalMs;
    this.handle = options.runner.add(this, options.wakeOn);
  }

  abstract runOnce(context: JobContext): Promise<PassResult>;

  /** A pass now. Cheap to call often: wake-ups during a pass fold into one more pass. */
  wake(): void {
    this.handle.wake();
  }

  /** A pass now, resolved when it has ended (work it started may outlive it: see `idle`). */
  pass(): Promise<void> {
    return this.handle.run();
  }

  /** Resolves when no work this job started is under way any more; for tests and the benchmark. */
  async idle(): Promise<void> {}
}
