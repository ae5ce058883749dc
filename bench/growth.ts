/**
 * Growth: the same measures with 10 k and then 1 M calls stored (bulk-loaded with their events, deliveries
 * and attempts, the server stopped): p50/p99 of create, get and list (first page) at a fixed rate, and the
 * dispatcher's rate on a fresh backlog. A figure that holds as the tables grow has a ratio near 1.
 */
import { createDatabase, log, type Dialect } from './harness.js';
import { drainBacklog, seedAccount, startReceiver } from './dispatcher.js';
import { createCall, openLoop, type Latency, type RequestMaker } from './load.js';
import { loadCalls, storedCallId, storedCallNumber } from './seed.js';

export interface GrowthSettings {
  readonly sizes: readonly number[];
  readonly rate: number;
  readonly durationS: number;
  readonly warmupS: number;
  readonly backlog: number;
}

export interface GrowthPoint {
  readonly storedCalls: number;
  readonly loadS: number;
  readonly create: Latency;
  readonly get: Latency;
  readonly list: Latency;
  /** GET /v1/calls?to=… (one number of 100,000: about one call in 100,000 matches), first page. */
  readonly filtered: Latency;
  readonly dispatcherPerSecond: number;
}

/** Rows per bulk statement: a progress line now and then, and no single statement of minutes. */
const chunk = 250_000;

export async function growthRun(dialect: Dialect, settings: GrowthSettings): Promise<GrowthPoint[]> {
  const receiver = await startReceiver();
  const database = await createDatabase(dialect);
  try {
    const seed = await seedAccount(database, receiver);
    const auth = { authorization: `Bearer ${seed.token}` };
    const points: GrowthPoint[] = [];
    let stored = 0;
    for (const size of settings.sizes) {
      const started = Date.now();
      for (let from = stored; from < size; from += chunk) {
        const total = settings.sizes[settings.sizes.length - 1]!;
        await loadCalls(database, seed, { from, to: Math.min(size, from + chunk), total }, started);
        log(`growth ${dialect}: ${Math.min(size, from + chunk).toLocaleString('en')} calls stored`);
      }
      const loadS = (Date.now() - started) / 1000;
      const { server, result } = await drainBacklog(database, seed, receiver, `g${size}`, settings.backlog);
      try {
        const known = size;
        const measure = (make: RequestMaker) => openLoop(server.url, make, settings.rate, settings.durationS, settings.warmupS);
        points.push({
          storedCalls: size,
          loadS,
          // Stored calls in a scattered order, so that the reads are not all from one page of the table.
          get: await measure((i) => ({ method: 'GET', path: `/v1/calls/${storedCallId((i * 7_919) % known)}`, headers: auth })),
          list: await measure(() => ({ method: 'GET', path: '/v1/calls', headers: auth })),
          filtered: await measure((i) => ({
            method: 'GET',
            path: `/v1/calls?to=${encodeURIComponent(storedCallNumber((i * 7_919) % known))}`,
            headers: auth,
          })),
          // Last: each created call's outcome event goes to the 20 endpoints, which the reads would run beside.
          create: await measure(createCall(seed.token, 'agent_test_simulator', `g${size}`)),
          dispatcherPerSecond: result.perSecond,
        });
      } finally {
        await server.stop();
      }
      stored = size;
    }
    return points;
  } finally {
    await database.drop();
    await receiver.close();
  }
}
