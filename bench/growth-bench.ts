/**
 * The growth benchmark on one database: the service with its tables grown (bench/growth-process.ts) and the
 * webhook receiver (bench/receiver-process.ts), each in a process of its own, this one making the requests.
 * For each size in turn (10,000 calls, then 1,000,000, on the same database: the rows of the first size stay)
 * the service is started afresh on the database and:
 *   load        the calls, events, deliveries and request-log rows up to the size, by bulk statements;
 *   plans       each hot path's statements with their plans (the report shows those of the largest size);
 *   requests    POST /v1/calls, GET /v1/calls/{id} (a stored call picked at random), the first page of
 *               GET /v1/calls, and its 50th page (the cursor found by following starting_after from the
 *               first page), each `requests` times from `concurrency` clients at once: p50 and p99 here;
 *   dispatcher  a backlog of due deliveries added, the worker started: deliveries/s counted at the receiver
 *               from the first arrival to the last.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { createTestDatabase, type Dialect, type TestDatabase } from '../test/support/test-database.js';
import { forkBenchScript, serviceEnv, type BenchChild } from './child-process.js';
import type { GrowthMessage, GrowthRequest, StatementPlan } from './growth-process.js';
import { growthAccounts, growthAgentId, isLiveKey, rowKey, storedCallId, type GrowthKey } from './growth-rows.js';
import { loadAverage, machineBusyShare, machineCpuTicks } from './machine.js';
import { logProblems, percentile, postgresBackendTicks, postgresCpuCoresBetween, type Measurement } from './measure.js';
import type { ReceiverMessage, ReceiverRequest } from './receiver-process.js';

export interface GrowthSettings {
  /** The sizes measured, in calls stored (each with its event, delivery and request-log row), each on a database of its own. */
  readonly sizes: readonly number[];
  /** Requests per kind and size, after `warmup` of each not counted, from `concurrency` clients at once. */
  readonly requests: number;
  readonly warmup: number;
  readonly concurrency: number;
  /** The requests and the backlog are split into this many rounds, alternating between the sizes. */
  readonly rounds: number;
  /** The page the deep-page figure reads (50: the cursor followed 49 times). */
  readonly deepPage: number;
  /** Due deliveries written for the dispatcher at each size. */
  readonly backlog: number;
  readonly logLevel: string;
}

export type RequestKind = 'create' | 'get' | 'firstPage' | 'deepPage';
export const requestKinds: readonly RequestKind[] = ['create', 'get', 'firstPage', 'deepPage'];

export interface Latency {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly count: number;
  readonly failures: number;
}

export interface GrowthStep {
  readonly size: number;
  /** Rows written by the bulk statements for this step (from the previous size), by table. */
  readonly loaded: Readonly<Record<string, number>>;
  readonly loadMs: number;
  readonly databaseBytes: number;
  readonly latency: Readonly<Record<RequestKind, Latency>>;
  readonly deliveriesPerSecond: number;
  readonly delivered: number;
  readonly deliveries: Readonly<Record<string, number>>;
  readonly plans: readonly StatementPlan[];
  readonly peakRssMb: number;
  readonly otherCpuCores: number | null;
  readonly loadAverageAtStart: string;
}

export interface GrowthMeasurement {
  readonly label: string;
  readonly dialect: Dialect;
  readonly steps: readonly GrowthStep[];
  readonly otherCpuCores: number | null;
  readonly logProblems: Measurement['logProblems'];
  readonly totalMs: number;
}

const startTimeoutMs = 120_000;
const answerTimeoutMs = 60_000;
const loadTimeoutMs = 1_800_000;

type Service = BenchChild<GrowthMessage, GrowthRequest>;
type Receiver = BenchChild<ReceiverMessage, ReceiverRequest>;

interface Page {
  data: { id: string }[];
  has_more: boolean;
}

async function request(
  baseUrl: string,
  token: string,
  method: 'GET' | 'POST',
  url: string,
  body?: string,
): Promise<{ status: number; text: string }> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body ? { 'content-type': 'application/json', 'idempotency-key': randomUUID() } : {}),
    },
    ...(body ? { body } : {}),
  });
  return { status: response.status, text: await response.text() };
}

/** `count` requests made by `concurrency` clients, each taking the next index; the times of the 2xx answers. */
async function timed(count: number, concurrency: number, make: (index: number) => Promise<{ status: number; text: string }>) {
  const times: number[] = [];
  let failures = 0;
  let firstFailure: string | null = null;
  let next = 0;
  const client = async () => {
    while (next < count) {
      const index = next++;
      const started = performance.now();
      const answer = await make(index);
      const ms = performance.now() - started;
      if (answer.status >= 200 && answer.status < 300) times.push(ms);
      else {
        failures++;
        firstFailure ??= `${answer.status} ${answer.text.slice(0, 200)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  if (firstFailure) process.stderr.write(`bench:   ${failures} failed requests, the first: ${firstFailure}\n`);
  return { times, failures };
}

function latencyOf(times: readonly number[], failures: number): Latency {
  const sorted = Float64Array.from(times).sort();
  return { p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), count: times.length, failures };
}

/** A small deterministic generator: the same calls are read at each size and in each run. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

interface Side {
  readonly index: number;
  readonly size: number;
  readonly database: TestDatabase;
  readonly child: Service;
  readonly baseUrl: string;
  readonly keys: readonly GrowthKey[];
  readonly loaded: Extract<GrowthMessage, { type: 'loaded' }>;
  readonly plans: readonly StatementPlan[];
  readonly cursors: readonly string[];
  readonly times: Record<RequestKind, number[]>;
  readonly failures: Record<RequestKind, number>;
  readonly rates: number[];
  delivered: number;
  deliveries: Readonly<Record<string, number>>;
}

const keyOf = (keys: readonly GrowthKey[], account: number, key: number) => keys.find((k) => k.account === account && k.key === key)!;

/** The cursor of each account's deep page: the last call of the page before it, followed from the first page. */
async function deepCursors(baseUrl: string, keys: readonly GrowthKey[], deepPage: number): Promise<string[]> {
  const cursors: string[] = [];
  for (let account = 0; account < growthAccounts; account++) {
    const token = keyOf(keys, account, 0).token;
    let after: string | null = null;
    for (let page = 1; page < deepPage; page++) {
      const answer = await request(baseUrl, token, 'GET', `/v1/calls${after ? `?starting_after=${after}` : ''}`);
      const parsed = JSON.parse(answer.text) as Page;
      if (answer.status !== 200 || parsed.data.length === 0 || !parsed.has_more)
        throw new Error(`account ${account} has no page ${page + 1} of calls (answer ${answer.status}); load more calls`);
      after = parsed.data[parsed.data.length - 1]!.id;
    }
    cursors.push(after!);
  }
  return cursors;
}

/** One round of requests on one side: `count` of each kind after `warmup` of it, the times added to the side's. */
async function requestRound(side: Side, settings: GrowthSettings, round: number, count: number, warmup: number): Promise<void> {
  const { baseUrl, keys, size, cursors } = side;
  const live = keys.filter((key) => key.mode === 'live');
  const body = (index: number) =>
    JSON.stringify({
      agent_id: growthAgentId,
      to: `+1415${String(3_000_000 + (index % 6_000_000)).padStart(7, '0')}`,
      metadata: { customer_id: `cus_${index}`, campaign: 'growth' },
    });
  const random = generator(size * 1_000 + round);
  const kinds: Record<RequestKind, (index: number) => Promise<{ status: number; text: string }>> = {
    create: (index) =>
      request(baseUrl, live[(round * count + index) % live.length]!.token, 'POST', '/v1/calls', body(round * count + index)),
    get: () => {
      // A stored call of this size (rows below `size`) and a key of its account and mode.
      const i = Math.floor(random() * size);
      const { account, key } = rowKey(i);
      const token = keyOf(keys, account, isLiveKey(key) ? 0 : keys.filter((k) => k.account === account).length - 1).token;
      return request(baseUrl, token, 'GET', `/v1/calls/${storedCallId(i)}`);
    },
    firstPage: (index) => request(baseUrl, keyOf(keys, index % growthAccounts, 0).token, 'GET', '/v1/calls'),
    deepPage: (index) =>
      request(baseUrl, keyOf(keys, index % growthAccounts, 0).token, 'GET', `/v1/calls?starting_after=${cursors[index % growthAccounts]}`),
  };
  for (const kind of requestKinds) {
    await timed(warmup, settings.concurrency, kinds[kind]);
    const { times, failures } = await timed(count, settings.concurrency, kinds[kind]);
    side.times[kind].push(...times);
    side.failures[kind] += failures;
  }
}

/** Writes a backlog of `count` due deliveries and has the worker send them (started now, or woken if running). */
async function dispatcherRate(service: Service, receiver: Receiver, accountId: string, from: number, count: number, start: boolean) {
  await service.ask({ type: 'backlog', from, count, accountId }, 'backlog-done', loadTimeoutMs);
  const reached = receiver.ask({ type: 'wait', count }, 'reached', 300_000).then(
    () => true,
    () => false,
  );
  if (start) await service.ask({ type: 'start-worker' }, 'worker-started', answerTimeoutMs);
  else await service.ask({ type: 'wake' }, 'woken', answerTimeoutMs);
  if (!(await reached)) process.stderr.write(`bench:   not every delivery arrived within 300 s\n`);
  const { deliveries } = await service.ask({ type: 'drain' }, 'drained', 120_000);
  const { collected } = await receiver.ask({ type: 'collect' }, 'collected', answerTimeoutMs);
  // Only the backlog's events count: the worker may also send others (none are due in the stored rows).
  const times = collected.firstArrivals
    .filter(([id]) => id.startsWith('evt_backlog'))
    .map(([, at]) => at)
    .sort((a, b) => a - b);
  const first = times[0] ?? 0;
  const last = times[times.length - 1] ?? 0;
  return { delivered: times.length, deliveriesPerSecond: times.length > 1 ? (times.length - 1) / ((last - first) / 1000) : 0, deliveries };
}

export async function measureGrowth(dialect: Dialect, settings: GrowthSettings, workDir: string): Promise<GrowthMeasurement> {
  const label = `growth, ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`;
  process.stderr.write(`bench: ${label} …\n`);
  const started = performance.now();
  const logFile = path.join(workDir, `${label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  const logFiles: string[] = [];
  const receiver: Receiver = forkBenchScript(new URL('./receiver-process.ts', import.meta.url), [], {
    env: {},
    logFile: path.join(workDir, 'growth-receiver.log'),
  });
  const databases: TestDatabase[] = [];
  const children: Service[] = [];
  const postgres: pg.Client[] = [];
  try {
    const { port: receiverPort } = await receiver.next('ready', startTimeoutMs);
    const start = async (database: TestDatabase, name: string) => {
      const file = `${logFile}.${name}`;
      logFiles.push(file);
      const child: Service = forkBenchScript(new URL('./growth-process.ts', import.meta.url), [], {
        env: serviceEnv(settings.logLevel, {
          ...database.env,
          // Nothing is refused, but every request is still counted by the limiter.
          CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000000',
          // The calls placed here stay in progress through the run: the monitor ends none, no event is added.
          CALLGATE_SIMULATOR_DELAY_MS: '3600000',
          CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
          BENCH_RECEIVER_URL: `http://127.0.0.1:${receiverPort}/webhooks`,
        }),
        logFile: file,
        nodeOptions: ['--expose-gc'],
      });
      children.push(child);
      const ready = await child.next('ready', startTimeoutMs);
      if (ready.secret) await receiver.ask({ type: 'configure', secret: ready.secret, verifyEvery: 0 }, 'configured', answerTimeoutMs);
      return { child, port: ready.port, keys: ready.keys };
    };
    const stop = async (child: Service) => {
      await child.ask({ type: 'stop' }, 'stopped', answerTimeoutMs);
      await Promise.race([child.exited, sleep(5_000)]);
      child.kill();
    };

    // Each size on a database of its own, both served at once: the rounds below alternate between them, so
    // that whatever else loads the machine falls on both sizes alike.
    const sides: Side[] = [];
    for (const [index, size] of settings.sizes.entries()) {
      const stepStarted = performance.now();
      const database = await createTestDatabase(dialect);
      databases.push(database);
      // The rows are written by one process and measured by another, started afresh: the writer's memory
      // (SQLite's page cache grown for the load, the garbage of it) is not the measured process's.
      const writer = await start(database, `${index}-load`);
      const keys = writer.keys;
      if (!keys) throw new Error('a new database was found seeded');
      const loaded = await writer.child.ask({ type: 'load', from: 0, to: size, keys }, 'loaded', loadTimeoutMs);
      process.stderr.write(
        `bench:   ${size.toLocaleString('en-US')} calls: loaded ${Object.entries(loaded.rows)
          .map(([table, n]) => `${n} ${table}`)
          .join(', ')} in ${(loaded.ms / 1000).toFixed(1)} s (database ${Math.round(loaded.bytes / 1024 ** 2)} MB)\n`,
      );
      await stop(writer.child);
      const measured = await start(database, `${index}`);
      const baseUrl = `http://127.0.0.1:${measured.port}`;
      // A live call of account 0 for the statements' parameters (row 0 is account 0's first live key's).
      const liveKey = keys.find((k) => k.account === 0 && k.mode === 'live')!;
      const testKey = keys.find((k) => k.account === 0 && k.mode === 'test')!;
      const { plans } = await measured.child.ask(
        { type: 'plans', token: liveKey.token, testToken: testKey.token, accountId: liveKey.accountId, callId: storedCallId(0) },
        'plans',
        answerTimeoutMs,
      );
      const scanning = plans.filter((p) => p.scans.length > 0);
      process.stderr.write(
        `bench:   ${plans.length} statements explained, ${scanning.length} reading a growing table whole${scanning.length > 0 ? `: ${scanning.map((p) => `${p.path} (${p.scans.join(', ')})`).join('; ')}` : ''} (${((performance.now() - stepStarted) / 1000).toFixed(0)} s)\n`,
      );
      if (database.env.DATABASE_URL) {
        const client = new pg.Client({ connectionString: database.env.DATABASE_URL });
        await client.connect();
        postgres.push(client);
      }
      sides.push({
        index,
        size,
        database,
        child: measured.child,
        baseUrl,
        keys,
        loaded,
        plans,
        cursors: await deepCursors(baseUrl, keys, settings.deepPage),
        times: { create: [], get: [], firstPage: [], deepPage: [] },
        failures: { create: 0, get: 0, firstPage: 0, deepPage: 0 },
        rates: [],
        delivered: 0,
        deliveries: {},
      });
    }

    for (const side of sides) await side.child.ask({ type: 'reset-peak' }, 'peak-reset', answerTimeoutMs);
    const loadAverageAtStart = loadAverage();
    const servicesCpuUs = async () => {
      let total = 0;
      for (const side of sides) total += (await side.child.ask({ type: 'stats' }, 'stats', answerTimeoutMs)).stats.cpuUs;
      return total;
    };
    const postgresTicks = async () =>
      postgres.length > 0 ? new Map((await Promise.all(postgres.map(postgresBackendTicks))).flatMap((m) => [...m])) : null;
    const before = {
      at: performance.now(),
      machine: machineCpuTicks(),
      pg: await postgresTicks(),
      services: await servicesCpuUs(),
      own: process.cpuUsage(),
    };
    const perRound = Math.ceil(settings.requests / settings.rounds);
    for (let round = 0; round < settings.rounds; round++) {
      // Each round in the other order: a drift of the machine's load over the run falls on both alike.
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        await requestRound(side, settings, round, perRound, round === 0 ? settings.warmup : Math.ceil(settings.warmup / 4));
      }
    }
    const seconds = (performance.now() - before.at) / 1000;
    const busy = machineBusyShare(before.machine, machineCpuTicks());
    const own = process.cpuUsage(before.own);
    const pgCores = postgresCpuCoresBetween(before.pg, await postgresTicks(), seconds);
    const otherCpuCores =
      busy === null
        ? null
        : Math.max(
            0,
            busy * os.cpus().length -
              ((await servicesCpuUs()) - before.services) / 1e6 / seconds -
              (own.user + own.system) / 1e6 / seconds -
              (pgCores ?? 0),
          );
    for (const side of sides) {
      process.stderr.write(
        `bench:   ${side.size.toLocaleString('en-US')}: ${requestKinds
          .map((kind) => {
            const l = latencyOf(side.times[kind], side.failures[kind]);
            return `${kind} p50 ${l.p50Ms.toFixed(2)} p99 ${l.p99Ms.toFixed(2)} ms`;
          })
          .join('; ')}\n`,
      );
    }
    process.stderr.write(`bench:   other processes ${otherCpuCores?.toFixed(2) ?? '-'} cores, load ${loadAverageAtStart}\n`);

    const backlogPerRound = Math.ceil(settings.backlog / settings.rounds);
    for (let round = 0; round < settings.rounds; round++) {
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
        const from = (round * sides.length + side.index) * backlogPerRound;
        const d = await dispatcherRate(side.child, receiver, side.keys[0]!.accountId, from, backlogPerRound, round === 0);
        side.rates.push(d.deliveriesPerSecond);
        side.delivered += d.delivered;
        side.deliveries = d.deliveries;
      }
    }
    const steps: GrowthStep[] = [];
    for (const side of sides) {
      const { stats } = await side.child.ask({ type: 'stats' }, 'stats', answerTimeoutMs);
      const rates = [...side.rates].sort((a, b) => a - b);
      const latency = Object.fromEntries(requestKinds.map((kind) => [kind, latencyOf(side.times[kind], side.failures[kind])])) as Record<
        RequestKind,
        Latency
      >;
      steps.push({
        size: side.size,
        loaded: side.loaded.rows,
        loadMs: side.loaded.ms,
        databaseBytes: side.loaded.bytes,
        latency,
        // The median round: one round slowed by a neighbour says little.
        deliveriesPerSecond: rates[Math.floor(rates.length / 2)] ?? 0,
        delivered: side.delivered,
        deliveries: side.deliveries,
        plans: side.plans,
        peakRssMb: stats.peakRssBytes / 1024 ** 2,
        otherCpuCores,
        loadAverageAtStart,
      });
      process.stderr.write(
        `bench:   ${side.size.toLocaleString('en-US')}: dispatcher ${side.rates.map((r) => Math.round(r)).join(', ')} deliveries/s (${side.delivered} delivered); peak RSS ${Math.round(stats.peakRssBytes / 1024 ** 2)} MB\n`,
      );
    }
    for (const side of sides) await stop(side.child);
    await receiver.ask({ type: 'stop' }, 'stopped', answerTimeoutMs);
    const problems = logFiles.map(logProblems);
    return {
      label,
      dialect,
      steps,
      otherCpuCores,
      logProblems: {
        count: problems.reduce((n, p) => n + p.count, 0),
        first: problems.find((p) => p.first)?.first ?? null,
      },
      totalMs: performance.now() - started,
    };
  } finally {
    for (const client of postgres) await client.end().catch(() => undefined);
    for (const child of children) child.kill();
    receiver.kill();
    for (const database of databases) await database.drop().catch(() => undefined);
  }
}
