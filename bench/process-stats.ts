/** What a bench child process says about itself: CPU, event-loop use and delay, peak memory. */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';

export interface ProcessStats {
  /** process.cpuUsage(): every thread of the process, in microseconds. */
  readonly cpuUs: number;
  /** Event-loop busy and idle time since start, ms (performance.eventLoopUtilization). */
  readonly eluActiveMs: number;
  readonly eluIdleMs: number;
  /** Peak resident set size of the process so far (VmHWM). */
  readonly peakRssBytes: number;
  /** Event-loop delay since the previous reading (how long a ready callback waited for the loop). */
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
}

export function peakRssBytes(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (match?.[1]) return Number(match[1]) * 1024;
  } catch {
    // Not Linux: getrusage's maxrss is the same figure.
  }
  return process.resourceUsage().maxRSS * 1024;
}

let loopDelay: ReturnType<typeof monitorEventLoopDelay> | undefined;

/** Starts the event-loop delay histogram; call once, early. */
export function watchEventLoop(): void {
  loopDelay ??= monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
}

/** Reads the counters; the event-loop delay histogram starts again from here. */
export function processStats(): ProcessStats {
  const cpu = process.cpuUsage();
  const elu = performance.eventLoopUtilization();
  const stats: ProcessStats = {
    cpuUs: cpu.user + cpu.system,
    eluActiveMs: elu.active,
    eluIdleMs: elu.idle,
    peakRssBytes: peakRssBytes(),
    loopDelayP99Ms: (loopDelay?.percentile(99) ?? 0) / 1e6,
    loopDelayMaxMs: (loopDelay?.max ?? 0) / 1e6,
  };
  loopDelay?.reset();
  return stats;
}

/** Wall-clock time in ms with sub-millisecond resolution, comparable between processes on one machine. */
export function wallClockMs(): number {
  return performance.timeOrigin + performance.now();
}

/** Starts the peak (VmHWM) again from the current RSS, so a later reading covers what followed only (Linux). */
export function resetPeakRss(): void {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Not Linux, or not allowed: the peak then covers the whole life of the process.
  }
}

/** The share of the time between two readings that the process's event loop was busy. */
export function loopBusyBetween(before: ProcessStats, after: ProcessStats): number {
  const active = after.eluActiveMs - before.eluActiveMs;
  const idle = after.eluIdleMs - before.eluIdleMs;
  return active / Math.max(1, active + idle);
}

/** This process's V8 sampling profiler (the one behind `node --cpu-prof`), started and stopped when the parent asks. */
export function cpuProfiler(): { start(): Promise<void>; stop(file: string): Promise<void> } {
  const session = new Session();
  return {
    async start() {
      session.connect();
      await session.post('Profiler.enable');
      // V8's default is 1000 µs; BENCH_PROFILE_INTERVAL_US (see run.ts) asks for finer samples.
      await session.post('Profiler.setSamplingInterval', { interval: Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 1000) });
      await session.post('Profiler.start');
    },
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
