/**
 * The batches under test, in a process of their own (forked by bench/batch-bench.ts): the service as built in
 * dist/ (createServices + buildApp, configured from the environment the parent sets, as src/server.ts does),
 * its worker (call monitor, webhook dispatcher, batch dialer) started when told. The one change: the
 * simulator is made here (createSimulatorProvider, the delay from the config) and handed in through the
 * provider registry, so that its counters (the highest concurrency it saw) can be read. Seeded with one
 * account, one simulator agent and one test-mode key, whose token goes to the parent, which makes its
 * requests over HTTP. On request it waits for a batch to end and reads what its calls' rows say of the run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fromDist, onParentRequest, runServiceChild, sendToParent } from './service-child.js';
import { processStats, resetPeakRss, watchEventLoop, type ProcessStats } from './process-stats.js';

/** One call of the batch: when it was placed, when it ended at the provider and when its outcome was recorded. */
export interface CallTimes {
  readonly placedMs: number;
  readonly endedMs: number;
  readonly recordedMs: number;
}

export interface BatchRun {
  readonly createdAtMs: number;
  readonly completedAtMs: number;
  readonly status: string;
  readonly counts: Readonly<Record<string, number>>;
  readonly placed: number;
  readonly highestConcurrency: number;
  /** Every call of the batch, in the order placed. */
  readonly calls: readonly CallTimes[];
}

export type BatchMessage =
  | { readonly type: 'ready'; readonly port: number; readonly token: string; readonly agentId: string; readonly delayMs: number }
  | { readonly type: 'stats'; readonly stats: ProcessStats }
  | { readonly type: 'peak-reset' | 'worker-started' | 'stopped' }
  | { readonly type: 'batch-ended'; readonly run: BatchRun }
  | { readonly type: 'failed'; readonly message: string };

export type BatchRequest =
  | { readonly type: 'stats' }
  /** Collects the garbage and starts the peak RSS again from here. */
  | { readonly type: 'reset-peak' }
  | { readonly type: 'start-worker' }
  /** Answers once the batch has ended (completed_at set), with the simulator's counters since the last wait. */
  | { readonly type: 'wait-batch'; readonly batchId: string; readonly timeoutMs: number }
  | { readonly type: 'stop' };

const send = (message: BatchMessage) => sendToParent(message);

const { loadConfig } = await fromDist<typeof import('../src/config.js')>('config.js');
const { createServices } = await fromDist<typeof import('../src/container.js')>('container.js');
const { buildApp } = await fromDist<typeof import('../src/app.js')>('app.js');
const { createAccount } = await fromDist<typeof import('../src/features/identity/accounts.service.js')>(
  'features/identity/accounts.service.js',
);
const { upsertAgent } = await fromDist<typeof import('../src/features/agents/agents.service.js')>('features/agents/agents.service.js');
const { createApiKey } = await fromDist<typeof import('../src/features/api-keys/api-keys.service.js')>(
  'features/api-keys/api-keys.service.js',
);
const { createSimulatorProvider } = await fromDist<typeof import('../src/features/providers/simulator.provider.js')>(
  'features/providers/simulator.provider.js',
);
const { createProviderRegistry } = await fromDist<typeof import('../src/features/providers/provider-registry.js')>(
  'features/providers/provider-registry.js',
);
const { systemClock } = await fromDist<typeof import('../src/lib/clock.js')>('lib/clock.js');

type Services = Awaited<ReturnType<typeof createServices>>;
type Simulator = ReturnType<typeof createSimulatorProvider>;

const agentId = 'agent_bench';

/** Polls the batch's row (a cheap read by primary key) until it has ended, then reads its calls. */
async function waitBatch(services: Services, simulator: Simulator, batchId: string, timeoutMs: number): Promise<BatchRun> {
  const { db } = services;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await db
      .selectFrom('batches')
      .select(['status', 'created_at', 'completed_at'])
      .where('id', '=', batchId)
      .executeTakeFirst();
    if (!batch) throw new Error(`no batch ${batchId}`);
    if (batch.completed_at !== null) {
      const stats = simulator.stats();
      const rows = await db
        .selectFrom('batch_recipients')
        .select((eb) => ['status', eb.fn.countAll<string | number>().as('n')])
        .where('batch_id', '=', batchId)
        .groupBy('status')
        .execute();
      const calls = await db
        .selectFrom('calls')
        .select(['created_at', 'ended_at', 'failed_at', 'updated_at'])
        .where('batch_id', '=', batchId)
        .execute();
      const times = calls
        .map((call) => ({
          placedMs: Date.parse(call.created_at),
          endedMs: Date.parse(call.ended_at ?? call.failed_at ?? call.updated_at),
          recordedMs: Date.parse(call.updated_at),
        }))
        .sort((a, b) => a.placedMs - b.placedMs);
      simulator.resetStats();
      return {
        createdAtMs: Date.parse(batch.created_at),
        completedAtMs: Date.parse(batch.completed_at),
        status: batch.status,
        counts: Object.fromEntries(rows.map((row) => [row.status, Number(row.n)])),
        placed: stats.placed,
        highestConcurrency: stats.highestConcurrency,
        calls: times,
      };
    }
    if (Date.now() > deadline) throw new Error(`batch ${batchId} had not ended after ${timeoutMs} ms (status ${batch.status})`);
    await sleep(20);
  }
}

async function main(): Promise<void> {
  watchEventLoop();
  const config = loadConfig();
  const simulator = createSimulatorProvider({ clock: systemClock, delayMs: config.simulatorDelayMs });
  const services = await createServices(config, { providers: createProviderRegistry({ simulator }) });
  const { db, clock } = services;
  const account = await createAccount(db, clock, { name: 'Benchmark' });
  await upsertAgent(db, clock, { accountId: account.id, agentId, name: 'Benchmark agent', provider: 'simulator' });
  const { token } = await createApiKey(db, clock, { accountId: account.id, name: 'bench batches', mode: 'test' });
  const app = buildApp(services);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  onParentRequest(async (message: BatchRequest) => {
    switch (message.type) {
      case 'stats':
        return send({ type: 'stats', stats: processStats() });
      case 'reset-peak':
        global.gc?.();
        resetPeakRss();
        return send({ type: 'peak-reset' });
      case 'start-worker':
        simulator.resetStats();
        services.startWorker();
        return send({ type: 'worker-started' });
      case 'wait-batch':
        return send({ type: 'batch-ended', run: await waitBatch(services, simulator, message.batchId, message.timeoutMs) });
      case 'stop':
        await app.close();
        await services.close();
        send({ type: 'stopped' });
        process.disconnect();
        return;
    }
  });
  send({ type: 'ready', port, token, agentId, delayMs: config.simulatorDelayMs });
}

runServiceChild('bench/batch-process.ts', main);
