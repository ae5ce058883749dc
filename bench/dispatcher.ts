/**
 * The webhook dispatcher as a subscriber sees it: deliveries received per second at a fast local receiver
 * (200 at once, in the bench's process), from a backlog of due deliveries seeded into the outbox before the
 * server starts, counted from the first delivery received to the last.
 */
import http from 'node:http';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import { addEndpoint, cli, createAccount, createDatabase, startServer, type BenchDatabase, type Dialect } from './harness.js';
import { seedBacklog, type SeedAccount } from './seed.js';

export interface DispatcherResult {
  readonly deliveries: number;
  readonly perSecond: number;
  /** Deliveries of the backlog received more than once (should be 0). */
  readonly duplicates: number;
}

export interface Receiver {
  readonly url: string;
  /** Resolves once `count` distinct event ids starting with `prefix` have arrived (or after `timeoutMs`). */
  expect(prefix: string, count: number, timeoutMs: number): Promise<DispatcherResult>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  let watch:
    | { prefix: string; seen: Set<string>; duplicates: number; first: number; last: number; done: () => void; count: number }
    | undefined;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** An account with a test key and an endpoint at the receiver, and what seeding needs to know of it. */
export async function seedAccount(database: BenchDatabase, receiver: Receiver): Promise<SeedAccount & { token: string }> {
  const { accountId, keyId, token } = await createAccount(database);
  const endpointId = await addEndpoint(database, accountId, receiver.url);
  const agents = await cli<{ data: { id: string; agent_id: string }[] }>(database, ['agents', 'list', '--account', accountId]);
  const agentRef = agents.data.find((agent) => agent.agent_id === 'agent_test_simulator')?.id;
  if (!agentRef) throw new Error('the new account has no simulator agent');
  return { accountId, keyId, token, endpointId, agentRef };
}

/**
 * Seeds `count` due deliveries with the server stopped, starts it, and waits for the receiver to have them
 * all; returns the running server for more measures (growth) or stops it.
 */
export async function drainBacklog(database: BenchDatabase, seed: SeedAccount, receiver: Receiver, tag: string, count: number) {
  await seedBacklog(database, seed, tag, count, Date.now());
  const arrived = receiver.expect(`evt_backlog_${tag}_`, count, 300_000);
  const server = await startServer(database);
  return { server, result: await arrived };
}

export async function dispatcherRun(dialect: Dialect, backlog: number, round: number): Promise<DispatcherResult> {
  const receiver = await startReceiver();
  const database = await createDatabase(dialect);
  try {
    const seed = await seedAccount(database, receiver);
    const { server, result } = await drainBacklog(database, seed, receiver, `r${round}`, backlog);
    await server.stop();
    return result;
  } finally {
    await database.drop();
    await receiver.close();
  }
}
