/**
 * An open-loop load generator: requests leave on a fixed schedule (one every 1000 / rate ms), whatever the
 * answers to earlier ones are doing, and each latency is counted from the moment its request was due, not
 * from the moment it left. A closed-loop tool (autocannon, or its overallRate, which sends in bursts) waits
 * for an answer before sending on that connection, so a stalled server sends it fewer requests exactly when
 * it is slow and the slow moments drop out of the figures (coordinated omission).
 *
 * node:http with a keep-alive agent of up to `maxConnections` sockets: a request never waits for another's
 * answer unless that many are outstanding at once (the peak is reported). Timers fire on a 1 ms grid, late
 * by half a millisecond on average, which would add to every latency; so the generator sleeps until about a
 * millisecond before the next request is due and then yields to the event loop (setImmediate, which still
 * reads answers) until it is. That costs it about a fifth of a core at 200 requests/s; how late requests
 * still left is reported as the send lag.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

export interface OpenLoopSettings {
  readonly ratePerSecond: number;
  readonly warmupS: number;
  readonly durationS: number;
  readonly maxConnections: number;
  /** Seconds after which a request counts as failed. */
  readonly timeoutS: number;
}

export interface OutgoingRequest {
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export interface OpenLoopResult {
  /** Latency of each 2xx answer to a request due inside the window, from its due time, sorted, ms. */
  readonly latenciesMs: Float64Array;
  /** Requests due inside the window. */
  readonly sent: number;
  readonly statusCounts: Readonly<Record<string, number>>;
  /** Requests due inside the window that got no answer (socket error or timeout). */
  readonly errors: number;
  /** How late requests of the window left, sorted, ms. */
  readonly sendLagMs: Float64Array;
  /** Most requests outstanding at once during the window. */
  readonly peakOutstanding: number;
  /** Wall-clock ms (performance.now()) at which the window opened and closed. */
  readonly windowStartMs: number;
  readonly windowEndMs: number;
}

export interface WindowHooks {
  /** Called when the warm-up ends and the window opens (readings of the target are taken here). */
  onWindowOpen?(): Promise<void> | void;
}

/** Wait this long with setImmediate before a request is due, instead of a timer that may fire late. */
const spinMs = 1.2;

function send(agent: http.Agent, url: URL, request: OutgoingRequest, timeoutMs: number, onDone: (status: number | null) => void): void {
  // A socket error may follow an answer already read: each request counts once.
  let settled = false;
  const done = (status: number | null) => {
    if (settled) return;
    settled = true;
    onDone(status);
  };
  const req = http.request(
    {
      agent,
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: request.path,
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
    },
    (res) => {
      res.resume();
      res.once('end', () => done(res.statusCode ?? 0));
      res.once('error', () => done(null));
    },
  );
  req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
  req.once('error', () => done(null));
  req.end(request.body);
}

/** Runs warm-up then the window on one schedule, and resolves once every request of the window is answered. */
export async function runOpenLoop(
  baseUrl: string,
  nextRequest: (n: number) => OutgoingRequest,
  settings: OpenLoopSettings,
  hooks: WindowHooks = {},
): Promise<OpenLoopResult> {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: settings.maxConnections });
  const periodMs = 1000 / settings.ratePerSecond;
  const warmupCount = Math.round(settings.warmupS * settings.ratePerSecond);
  const total = warmupCount + Math.round(settings.durationS * settings.ratePerSecond);
  const latencies: number[] = [];
  const lags: number[] = [];
  const statusCounts: Record<string, number> = {};
  let errors = 0;
  let outstanding = 0;
  let peakOutstanding = 0;
  let windowStartMs = 0;
  let windowEndMs = 0;
  let opening: Promise<void> | undefined;

  const start = performance.now() + 20;
  let next = 0;
  let answeredInWindow = 0;
  await new Promise<void>((resolve) => {
    const finishIfDone = () => {
      if (next >= total && answeredInWindow === total - warmupCount) resolve();
    };
    const fire = (n: number, dueMs: number, now: number) => {
      const inWindow = n >= warmupCount;
      if (n === warmupCount) {
        windowStartMs = dueMs;
        opening = Promise.resolve(hooks.onWindowOpen?.());
      }
      if (inWindow) lags.push(now - dueMs);
      outstanding++;
      if (inWindow) peakOutstanding = Math.max(peakOutstanding, outstanding);
      send(agent, url, nextRequest(n), settings.timeoutS * 1000, (status) => {
        const end = performance.now();
        outstanding--;
        if (!inWindow) return;
        answeredInWindow++;
        windowEndMs = Math.max(windowEndMs, end);
        if (status === null) errors++;
        else {
          statusCounts[status] = (statusCounts[status] ?? 0) + 1;
          if (status >= 200 && status < 300) latencies.push(end - dueMs);
        }
        finishIfDone();
      });
    };
    const tick = () => {
      const now = performance.now();
      while (next < total && start + next * periodMs <= now) {
        fire(next, start + next * periodMs, now);
        next++;
      }
      if (next >= total) return finishIfDone();
      const wait = start + next * periodMs - performance.now();
      if (wait > spinMs + 1) setTimeout(tick, Math.floor(wait - spinMs));
      else setImmediate(tick);
    };
    tick();
  });
  await opening;
  agent.destroy();
  return {
    latenciesMs: Float64Array.from(latencies).sort(),
    sent: total - warmupCount,
    statusCounts,
    errors,
    sendLagMs: Float64Array.from(lags).sort(),
    peakOutstanding,
    windowStartMs,
    windowEndMs,
  };
}
