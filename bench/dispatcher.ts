/**
 * The webhook dispatcher as subscribers see it. Two runs a round, each on a database of its own:
 * - all healthy: a backlog of due deliveries, seeded into the outbox before the server starts, spread over
 *   20 endpoints of one account at a fast local receiver (answers at once, in the bench's process);
 *   deliveries/s is counted from the first delivery received to the last. One endpoint alone gets at most
 *   CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY (4) attempts at once, which is a measure of the receiver's answer
 *   time, not of the dispatcher.
 * - with a dead endpoint: the same backlog and, in another account, an endpoint whose receiver accepts
 *   connections and never answers, with 1,000 due deliveries of its own. The healthy backlog's rate is
 *   compared with the all-healthy run's; then the healthy account places calls (10 a second for 10 s, the
 *   simulator ending each after 200 ms) and each of their events is timed from its outcome (the event's
 *   `created_at`) to its receipt at every healthy endpoint.
 */
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  cli,
  createAccount,
  createDatabase,
  percentile,
  simulatorAgentId,
  startServer,
  type BenchDatabase,
  type Dialect,
} from './harness.js';
import { seedBacklog, seedEndpoints, type SeedAccount } from './seed.js';

export interface DrainResult {
  readonly deliveries: number;
  readonly perSecond: number;
  /** Deliveries of the backlog received more than once (should be 0). */
  readonly duplicates: number;
}

export interface DispatcherResult extends DrainResult {
  /** The same backlog beside an endpoint that never answers. */
  readonly withDeadEndpoint?: {
    readonly perSecond: number;
    /** perSecond over the all-healthy run's. */
    readonly ratio: number;
    /** Events of calls placed while the dead endpoint had due deliveries: outcome to receipt, at every healthy endpoint. */
    readonly live: { readonly deliveries: number; readonly expected: number; readonly p50Ms: number; readonly p99Ms: number };
    /** The most requests the dead receiver held open at once. */
    readonly deadInFlightMax: number;
  };
}

/** Endpoints of the healthy account: with 4 attempts at once each, more than a worker's 64 slots. */
export const healthyEndpoints = 20;
const deadBacklog = 1_000;
const live = { callsPerSecond: 10, seconds: 10, simulatorDelayMs: 200 } as const;

export interface Receiver {
  readonly url: string;
  /** Resolves once `count` distinct event ids starting with `prefix` have arrived (or after `timeoutMs`). */
  expect(prefix: string, count: number, timeoutMs: number): Promise<DrainResult>;
  /** From now on, the time from each call event's `created_at` to its receipt (events not of a backlog). */
  timeLiveEvents(): number[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  let watch:
    | { prefix: string; seen: Set<string>; duplicates: number; first: number; last: number; done: () => void; count: number }
    | undefined;
  let liveTimes: number[] | undefined;
  const server = http.createServer((req, res) => {
    const id = String(req.headers['webhook-id'] ?? '');
    const timed = liveTimes !== undefined && !id.startsWith('evt_backlog_');
    const chunks: Buffer[] = [];
    if (timed) req.on('data', (chunk: Buffer) => chunks.push(chunk));
    else req.resume();
    req.on('end', () => {
      if (timed && liveTimes) {
        const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; created_at: string };
        if (event.type.startsWith('call.')) liveTimes.push(Date.now() - Date.parse(event.created_at));
      }
      if (watch && id.startsWith(watch.prefix)) {
        const now = performance.now();
        if (watch.seen.has(id)) watch.duplicates += 1;
        watch.seen.add(id);
        if (watch.seen.size === 1) watch.first = now;
        watch.last = now;
        if (watch.seen.size >= watch.count) watch.done();
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/webhooks`,
    async expect(prefix, count, timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((done) => {
        watch = { prefix, seen: new Set(), duplicates: 0, first: 0, last: 0, done, count };
        timer = setTimeout(done, timeoutMs);
      });
      clearTimeout(timer);
      const w = watch!;
      watch = undefined;
      return { deliveries: w.seen.size, perSecond: ((w.seen.size - 1) * 1000) / (w.last - w.first), duplicates: w.duplicates };
    },
    timeLiveEvents() {
      liveTimes = [];
      return liveTimes;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A receiver that accepts connections and never answers (a deploy gone wrong): the worst a receiver can do. */
async function startDeadReceiver(): Promise<{ url: string; inFlightMax(): number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let inFlightMax = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    inFlightMax = Math.max(inFlightMax, sockets.size);
    socket.on('data', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/webhooks`,
    inFlightMax: () => inFlightMax,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** An account with a test key and `endpoints` endpoints at the receiver, and what seeding needs to know of it. */
export async function seedAccount(
  database: BenchDatabase,
  receiver: { readonly url: string },
  endpoints = healthyEndpoints,
): Promise<SeedAccount & { token: string; endpointIds: readonly string[] }> {
  const { accountId, keyId, token } = await createAccount(database);
  const urls = Array.from({ length: endpoints }, (_unused, i) => `${receiver.url}/${i}`);
  const endpointIds = await seedEndpoints(database, { accountId, tag: accountId.slice(-8) }, urls, Date.now());
  const agents = await cli<{ data: { id: string; agent_id: string }[] }>(database, ['agents', 'list', '--account', accountId]);
  const agentRef = agents.data.find((agent) => agent.agent_id === simulatorAgentId)?.id;
  if (!agentRef) throw new Error('the new account has no simulator agent');
  return { accountId, keyId, token, endpointId: endpointIds[0]!, endpointIds, agentRef };
}

/**
 * Seeds `count` due deliveries with the server stopped, starts it, and waits for the receiver to have them
 * all; returns the running server for more measures (growth, live events) or stops it.
 */
export async function drainBacklog(
  database: BenchDatabase,
  seed: SeedAccount,
  receiver: Receiver,
  tag: string,
  count: number,
  env: Record<string, string> = {},
) {
  await seedBacklog(database, seed, tag, count, Date.now());
  const arrived = receiver.expect(`evt_backlog_${tag}_`, count, 300_000);
  const server = await startServer(database, env);
  return { server, result: await arrived };
}

/** Places calls at a steady rate through the API; returns how many were accepted. */
async function placeCalls(url: string, token: string, tag: string): Promise<number> {
  const requests: Promise<boolean>[] = [];
  const started = performance.now();
  for (let i = 0; i < live.callsPerSecond * live.seconds; i++) {
    const due = started + (i * 1000) / live.callsPerSecond;
    await sleep(Math.max(0, due - performance.now()));
    requests.push(
      fetch(`${url}/v1/calls`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'idempotency-key': `${tag}-${i}` },
        body: JSON.stringify({ agent_id: simulatorAgentId, to: '+14155550123' }),
      }).then((response) => response.status === 201),
    );
  }
  return (await Promise.all(requests)).filter(Boolean).length;
}

async function withDeadEndpoint(dialect: Dialect, backlog: number, round: number, allHealthy: number) {
  const receiver = await startReceiver();
  const dead = await startDeadReceiver();
  const database = await createDatabase(dialect);
  try {
    const healthy = await seedAccount(database, receiver);
    const deadAccount = await createAccount(database);
    const [deadEndpoint] = await seedEndpoints(database, { accountId: deadAccount.accountId, tag: 'dead' }, [dead.url], Date.now());
    await seedBacklog(
      database,
      { ...healthy, accountId: deadAccount.accountId, endpointId: deadEndpoint!, endpointIds: [deadEndpoint!] },
      `d${round}`,
      deadBacklog,
      Date.now(),
    );
    const env = { CALLGATE_SIMULATOR_DELAY_MS: String(live.simulatorDelayMs) };
    const { server, result } = await drainBacklog(database, healthy, receiver, `h${round}`, backlog, env);
    try {
      const times = receiver.timeLiveEvents();
      const calls = await placeCalls(server.url, healthy.token, `live-${round}`);
      const expected = calls * healthyEndpoints;
      const deadline = Date.now() + 60_000;
      while (times.length < expected && Date.now() < deadline) await sleep(100);
      const sorted = [...times].sort((a, b) => a - b);
      return {
        perSecond: result.perSecond,
        ratio: result.perSecond / allHealthy,
        live: { deliveries: times.length, expected, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) },
        deadInFlightMax: dead.inFlightMax(),
      };
    } finally {
      await server.stop();
    }
  } finally {
    await database.drop();
    await dead.close();
    await receiver.close();
  }
}

export async function dispatcherRun(dialect: Dialect, backlog: number, round: number): Promise<DispatcherResult> {
  const receiver = await startReceiver();
  const database = await createDatabase(dialect);
  let allHealthy: DrainResult;
  try {
    const seed = await seedAccount(database, receiver);
    const { server, result } = await drainBacklog(database, seed, receiver, `r${round}`, backlog);
    await server.stop();
    allHealthy = result;
  } finally {
    await database.drop();
    await receiver.close();
  }
  return { ...allHealthy, withDeadEndpoint: await withDeadEndpoint(dialect, backlog, round, allHealthy.perSecond) };
}
