/**
 * The worker role's one loop machinery. Every background task (the call monitor, the webhook dispatcher, the
 * purges) is a `Job`: one pass over the work that is due, run by this runner on its interval, at once on a
 * wake-up (a signal such as the delivery notifier: NOTIFY on PostgreSQL, in-process on SQLite), or at a
 * moment a job asks for. The runner owns what each loop had its own copy of: the timers, the stop flag,
 * folding wake-ups that come during a pass into one more pass, the error logging, and a shutdown whose
 * wait is bounded. Jobs claim their rows with `claimRows` (db/claim.ts), so several runners, in one process or
 * many, never work on one row at once, and a row whose runner died comes back when its lease ends.
 */
import type { FastifyBaseLogger } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import type { Clock } from '../lib/clock.js';

export interface JobContext {
  /** The runner's clock: what "now" is for this pass. */
  readonly now: Date;
  /** True once the runner is stopping: a pass stops taking new work. */
  stopping(): boolean;
}

export interface PassResult {
  /** The pass took a full batch: run again at once rather than at the next interval. */
  readonly more?: boolean;
  /** Rows the pass claimed (for the metrics). */
  readonly claimed?: number;
}

export interface Job {
  /** Unique in a runner; names the job in logs. */
  readonly name: string;
  /** Its log lines say "<label> failed", e.g. "call monitor sweep". */
  readonly label: string;
  /** Passes run at least this often while the runner runs. */
  readonly intervalMs: number;
  /** A pass at start (default), or only after the first interval (the purges). */
  readonly runAtStart?: boolean;
  /** One pass over the due work. */
  runOnce(context: JobContext): Promise<PassResult | undefined>;
  /** Work that outlives its pass (the dispatcher's attempts); a shutdown waits for it until its deadline. */
  pending?(): Promise<unknown>;
  /** After that wait: what is still under way is handed back (recorded, its claims released). */
  handBack?(): Promise<void>;
}

/** What wakes a job: the delivery notifier is one (NOTIFY/LISTEN on PostgreSQL, an EventEmitter on SQLite). */
export interface WakeSignal {
  subscribe(listener: () => void): () => void;
}

/**
 * `signal`, each wake-up passed on up to `maxMs` later, at random (those heard while one waits join it).
 * Workers in several processes hear one NOTIFY in the same order every time (PostgreSQL signals its
 * listeners in the order they subscribed, and the process that sent it hears it first), so one would win
 * every race for the work it announces and the others sit idle; a few milliseconds of chance share it.
 */
export function staggered(signal: WakeSignal, maxMs: number, random: () => number = Math.random): WakeSignal {
  return {
    subscribe(listener) {
      let timer: NodeJS.Timeout | undefined;
      const unsubscribe = signal.subscribe(() => {
        if (timer) return;
        timer = setTimeout(() => {
          timer = undefined;
          listener();
        }, random() * maxMs);
        timer.unref();
      });
      return () => {
        unsubscribe();
        clearTimeout(timer);
      };
    },
  };
}

/** What a job uses to ask for its next pass. */
export interface JobHandle {
  /** A pass now; one asked for during a pass runs once that pass ends. Cheap to call often. */
  wake(): void;
  /**
   * A pass at `at`, sooner than the interval would; looks asked for within `wakeGranularityMs` of each other
   * share one timer, which fires at the latest of them.
   */
  wakeAt(at: Date): void;
  /** A pass now, resolved when it (or the pass that follows the one under way) has ended. */
  run(): Promise<void>;
  /** Tells the runner's observer that `count` claims ran out before their work was recorded. */
  leaseLost(count: number): void;
}

/**
 * What asked for a pass: the job's wake-up signal (a NOTIFY heard, on PostgreSQL), its sweep interval (and
 * the start), or the job itself (its own work ending, a look it asked for).
 */
export type WakeSource = 'signal' | 'sweep' | 'job';

/** Hears every wake-up, pass and lost lease, per job: the metrics. */
export interface JobObserver {
  woken?(job: string, source: WakeSource): void;
  passEnded(job: string, result: 'ok' | 'error', durationMs: number, claimed: number): void;
  leaseLost(job: string, count: number): void;
}

/** Whether a started job still beats: when it started and when its last pass ended well (runner's clock). */
export interface JobBeat {
  readonly name: string;
  readonly intervalMs: number;
  readonly startedAt: Date;
  readonly lastPassAt: Date | undefined;
}

export interface JobRunnerOptions {
  readonly clock: Clock;
  readonly logger: FastifyBaseLogger;
  /**
   * Looks asked for within this many ms share one timer and so one pass: at a thousand calls a second, a
   * timer per call would claim one or two calls per statement and commit each ending alone. No look waits
   * longer than this for its pass to start.
   */
  readonly wakeGranularityMs?: number;
  /** Looks asked for further off than this are left to the interval. */
  readonly maxWakeDelayMs?: number;
  readonly observer?: JobObserver;
}

const defaultWakeGranularityMs = 50;
const defaultMaxWakeDelayMs = 60_000;
/**
 * A timer may fire up to a millisecond before the clock reads its moment (libuv's loop time and Date.now()
 * round apart); a pass that ran that early would find the rows due at that moment not due yet.
 */
const timerSlackMs = 1;

/**
 * Looks that share one timer. It fires at the latest look of the group (`fireAt`), which is never more than
 * the granularity after the earliest (`earliest`): a burst of looks asked for the same few milliseconds (a
 * batch's calls, placed together, ending together) gets its pass the moment the last of them is due, not at
 * the end of a fixed time slot; a steady stream still gets one pass per granularity.
 */
interface LookGroup {
  earliest: number;
  fireAt: number;
  /** The moment (by the runner's clock) the group's timer was set for; moved on when `fireAt` moved. */
  armedFor: number;
}

interface Entry {
  readonly job: Job;
  readonly signal: WakeSignal | undefined;
  readonly handle: JobHandle;
  interval: NodeJS.Timeout | undefined;
  startTimer: NodeJS.Timeout | undefined;
  /** The timers of the looks asked for (one per group); cleared at stop. */
  readonly timers: Set<NodeJS.Timeout>;
  /** The group a new look may join: the last one made, while its timer has not fired. */
  openGroup: LookGroup | undefined;
  unsubscribe: (() => void) | undefined;
  running: Promise<void> | undefined;
  /** A pass that was asked for while one ran, and its promise. */
  again: Promise<void> | undefined;
  started: boolean;
  startedAt: Date | undefined;
  lastPassAt: Date | undefined;
}

export class JobRunner {
  private readonly entries = new Map<string, Entry>();
  private stopped = true;
  private stopping: Promise<void> | undefined;

  constructor(private readonly options: JobRunnerOptions) {}

  /** Adds a job; with `wakeOn`, every signal runs a pass. Returns what the job uses to ask for passes. */
  add(job: Job, wakeOn?: WakeSignal): JobHandle {
    if (this.entries.has(job.name)) throw new Error(`a job named "${job.name}" is already added`);
    const entry: Entry = {
      job,
      signal: wakeOn,
      handle: {
        wake: () => this.wakeFrom(entry, 'job'),
        wakeAt: (at) => this.wakeAt(entry, at),
        run: () => this.pass(entry),
        leaseLost: (count) => {
          if (count > 0) this.options.observer?.leaseLost(job.name, count);
        },
      },
      interval: undefined,
      startTimer: undefined,
      timers: new Set(),
      openGroup: undefined,
      unsubscribe: undefined,
      running: undefined,
      again: undefined,
      started: false,
      startedAt: undefined,
      lastPassAt: undefined,
    };
    this.entries.set(job.name, entry);
    return entry.handle;
  }

  /**
   * Starts the named jobs (every job when none are named). Timers are unref'd: the runner never keeps a
   * process alive by itself (server.ts keeps a worker process alive).
   */
  start(names?: readonly string[]): void {
    this.stopped = false;
    this.stopping = undefined;
    for (const entry of this.entries.values()) {
      if (entry.started || (names && !names.includes(entry.job.name))) continue;
      entry.started = true;
      entry.startedAt = this.options.clock.now();
      entry.interval = setInterval(() => this.wakeFrom(entry, 'sweep'), entry.job.intervalMs);
      entry.interval.unref();
      entry.unsubscribe = entry.signal?.subscribe(() => this.wakeFrom(entry, 'signal'));
      if (entry.job.runAtStart ?? true) this.wakeFrom(entry, 'sweep');
    }
  }

  /**
   * Stops every job: no pass starts any more and those under way end; work that outlives its pass gets
   * until `graceMs` from now, then is handed back. Safe to call twice.
   */
  stop(graceMs = 10_000): Promise<void> {
    this.stopping ??= this.stopAll(graceMs);
    return this.stopping;
  }

  private async stopAll(graceMs: number): Promise<void> {
    const deadline = Date.now() + graceMs;
    this.stopped = true;
    const entries = [...this.entries.values()].filter((entry) => entry.started);
    for (const entry of entries) {
      entry.started = false;
      clearInterval(entry.interval);
      for (const timer of entry.timers) clearTimeout(timer);
      entry.timers.clear();
      entry.openGroup = undefined;
      entry.unsubscribe?.();
      entry.unsubscribe = undefined;
    }
    await Promise.all(entries.map((entry) => entry.again ?? entry.running));
    const pending = Promise.allSettled(entries.map((entry) => entry.job.pending?.()));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([pending, new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    await Promise.all(
      entries.map((entry) =>
        entry.job
          .handBack?.()
          .catch((error: unknown) => this.options.logger.warn({ err: error, job: entry.job.name }, 'handing back unfinished work failed')),
      ),
    );
  }

  /** The started jobs with their last good pass: what readiness and the lag gauge read. */
  beats(): JobBeat[] {
    return [...this.entries.values()].flatMap((entry) =>
      entry.started && entry.startedAt
        ? [{ name: entry.job.name, intervalMs: entry.job.intervalMs, startedAt: entry.startedAt, lastPassAt: entry.lastPassAt }]
        : [],
    );
  }

  /** A pass asked for by `source`, counted by the observer (a worker never woken by its signal shows there). */
  private wakeFrom(entry: Entry, source: WakeSource): void {
    if (this.stopped || !entry.started) return;
    this.options.observer?.woken?.(entry.job.name, source);
    void this.pass(entry);
  }

  /** A pass, or, while one runs, the one after it; wake-ups during a pass fold into that one. */
  private pass(entry: Entry): Promise<void> {
    if (this.stopped || !entry.started) return Promise.resolve();
    if (entry.running) {
      entry.again ??= entry.running.then(() => {
        entry.again = undefined;
        return this.pass(entry);
      });
      return entry.again;
    }
    const running = this.passes(entry).finally(() => {
      if (entry.running === running) entry.running = undefined;
    });
    entry.running = running;
    return running;
  }

  private async passes(entry: Entry): Promise<void> {
    const { job } = entry;
    const stopping = () => this.stopped;
    const { observer } = this.options;
    let began = performance.now();
    try {
      for (;;) {
        began = performance.now();
        const result = await job.runOnce({ now: this.options.clock.now(), stopping });
        entry.lastPassAt = this.options.clock.now();
        observer?.passEnded(job.name, 'ok', performance.now() - began, result?.claimed ?? 0);
        if (this.stopped || !result?.more) return;
      }
    } catch (error) {
      observer?.passEnded(job.name, 'error', performance.now() - began, 0);
      if (isDatabaseUnavailable(error)) {
        this.options.logger.warn({ err: error }, `${job.label} failed: the database is unavailable; trying again at the next sweep`);
      } else {
        this.options.logger.error({ err: error }, `${job.label} failed`);
      }
    }
  }

  private wakeAt(entry: Entry, at: Date): void {
    if (this.stopped || !entry.started) return;
    const granularity = this.options.wakeGranularityMs ?? defaultWakeGranularityMs;
    const now = this.options.clock.now().getTime();
    const moment = at.getTime();
    // Far-off looks (reconciliation) are left to the interval; timers are for prompt ones only.
    if (moment - now > (this.options.maxWakeDelayMs ?? defaultMaxWakeDelayMs)) return;
    const open = entry.openGroup;
    if (open && moment <= open.fireAt && open.fireAt - moment <= granularity) {
      // The group's pass comes at or after this look, and soon enough.
      open.earliest = Math.min(open.earliest, moment);
      return;
    }
    if (open && moment > open.fireAt && moment - open.earliest <= granularity) {
      // A later look joins the group: its pass waits for it (the timer, once fired, waits the difference).
      open.fireAt = moment;
      return;
    }
    const group: LookGroup = { earliest: moment, fireAt: moment, armedFor: moment };
    entry.openGroup = group;
    this.arm(entry, group, Math.max(0, moment - now));
  }

  private arm(entry: Entry, group: LookGroup, delayMs: number): void {
    const timer = setTimeout(() => {
      entry.timers.delete(timer);
      if (group.fireAt > group.armedFor) {
        // Looks joined after the timer was set: wait for the latest, by the difference (never by a fresh
        // reading of the clock, which an injected clock may hold still).
        const rest = group.fireAt - group.armedFor;
        group.armedFor = group.fireAt;
        this.arm(entry, group, rest);
        return;
      }
      if (entry.openGroup === group) entry.openGroup = undefined;
      entry.handle.wake();
    }, delayMs + timerSlackMs);
    timer.unref();
    entry.timers.add(timer);
  }
}

/** A job that runs one task on its interval (the purges): no claim, no wake-ups, nothing left at shutdown. */
export function periodicJob(spec: {
  readonly name: string;
  readonly label: string;
  readonly intervalMs: number;
  readonly runAtStart?: boolean;
  readonly run: (now: Date) => Promise<unknown>;
}): Job {
  return {
    name: spec.name,
    label: spec.label,
    intervalMs: spec.intervalMs,
    runAtStart: spec.runAtStart ?? false,
    runOnce: async ({ now }) => void (await spec.run(now)),
  };
}
