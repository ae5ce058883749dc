/**
 * The two loads: closed loop (autocannon, N connections each sending its next request once answered) for
 * throughput, and open loop (requests sent at a fixed rate whatever the answers) for the latency a user
 * sees at a given traffic.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import { percentile } from './harness.js';

export interface BenchRequest {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

/** Builds the i-th request (a fresh Idempotency-Key, another stored call, …). */
export type RequestMaker = (i: number) => BenchRequest;

export interface Throughput {
  readonly requestsPerSecond: number;
  readonly errors: number;
}

/** Answers per second (2xx only) from `connections` connections over `durationS`, after a warm-up run. */
export async function throughput(
  url: string,
  make: RequestMaker,
  load: { connections: number; durationS: number; warmupS: number },
): Promise<Throughput> {
  const { connections, durationS, warmupS } = load;
  let i = 0;
  const run = (duration: number) =>
    autocannon({ url, connections, duration, timeout: 10, requests: [{ setupRequest: () => ({ ...make(i++) }) }] });
  if (warmupS > 0) await run(warmupS);
  const result = await run(durationS);
  return { requestsPerSecond: result['2xx'] / durationS, errors: result.non2xx + result.errors + result.timeouts };
}

export interface Latency {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly count: number;
  readonly errors: number;
  /** The bench's own event-loop delay p99 while measuring: when high, the load generator was starved of CPU. */
  readonly clientLagP99Ms: number;
}

/**
 * Sends `rate` requests a second for `durationS`, each at its scheduled time whatever the earlier ones are
 * doing (open loop: a slow answer does not hold the next request back, as with real users), and times each
 * from the moment it is handed to the client to its answer's last byte. The warm-up is sent the same way
 * and not counted.
 */
export async function openLoop(url: string, make: RequestMaker, rate: number, durationS: number, warmupS: number): Promise<Latency> {
  // Enough sockets that a request never waits for one unless the server stalls for a second.
  const pool = new Pool(url, { connections: Math.max(16, rate), pipelining: 1 });
  try {
    await schedule(pool, make, rate, warmupS, 0);
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const times = await schedule(pool, make, rate, durationS, Math.ceil(warmupS * rate));
    lag.disable();
    const ok = times.filter((t) => t >= 0).sort((a, b) => a - b);
    const clientLagP99Ms = lag.percentile(99) / 1e6;
    return { p50Ms: percentile(ok, 50), p99Ms: percentile(ok, 99), count: ok.length, errors: times.length - ok.length, clientLagP99Ms };
  } finally {
    await pool.close();
  }
}

/** Each request's time in ms, or -1 when it failed or was not answered 2xx. */
async function schedule(pool: Pool, make: RequestMaker, rate: number, durationS: number, first: number): Promise<number[]> {
  const total = Math.round(rate * durationS);
  const started = performance.now();
  const pending: Promise<number>[] = [];
  for (let n = 0; n < total; n++) {
    const wait = started + (n * 1000) / rate - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(send(pool, make(first + n)));
  }
  return Promise.all(pending);
}

async function send(pool: Pool, request: BenchRequest): Promise<number> {
  const sent = performance.now();
  try {
    const response = await pool.request({ ...request, headersTimeout: 10_000, bodyTimeout: 10_000 });
    await response.body.dump();
    return response.statusCode >= 200 && response.statusCode < 300 ? performance.now() - sent : -1;
  } catch {
    return -1;
  }
}

/** `POST /v1/calls` of the simulator agent, each with a fresh Idempotency-Key, as integrators send it. */
export function createCall(token: string, agentId: string, tag: string): RequestMaker {
  return (i) => ({
    method: 'POST',
    path: '/v1/calls',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `${tag}-${i}` },
    body: JSON.stringify({ agent_id: agentId, to: '+14155550123', metadata: { customer_id: `cus_${i}`, campaign: 'renewals' } }),
  });
}
