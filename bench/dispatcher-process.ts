/**
 * The webhook dispatcher under test, in a process of its own (forked by bench/dispatcher-bench.ts): the service
 * from dist/ (createServices, configured from the environment the parent sets; the worker started only when
 * asked), one account with one endpoint pointing at the bench receiver. On request it fills a backlog of
 * events with enqueueEvent, starts the worker, waits for it to go idle, and records call outcomes at a steady
 * rate through recordOutcome, noting when each outcome's transaction had committed.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { fromDist, onParentRequest, runServiceChild, sendToParent } from './service-child.js';
import { cpuProfiler, processStats, resetPeakRss, wallClockMs, watchEventLoop, type ProcessStats } from './process-stats.js';

export type DispatcherMessage =
  | { readonly type: 'ready'; readonly secret: string; readonly concurrency: number }
  | { readonly type: 'backlog-done'; readonly events: number; readonly ms: number }
  | { readonly type: 'worker-started'; readonly atMs: number }
  | { readonly type: 'drained'; readonly atMs: number; readonly deliveries: Readonly<Record<string, number>>; readonly attempts: number }
  | { readonly type: 'calls-prepared'; readonly count: number }
  /** Event id and the wall-clock ms at which its outcome's transaction had committed. */
  | { readonly type: 'outcomes-done'; readonly commits: readonly (readonly [string, number])[]; readonly lagMaxMs: number }
  | { readonly type: 'stats'; readonly stats: ProcessStats }
  | { readonly type: 'profile-started' | 'profile-stopped' | 'stopped' }
  | { readonly type: 'failed'; readonly message: string };

export type DispatcherRequest =
  /** Writes `events` events (one delivery each) in transactions of `batchSize`, `parallel` transactions at a time. */
  | { readonly type: 'backlog'; readonly events: number; readonly batchSize: number; readonly parallel: number }
  | { readonly type: 'start-worker' }
  /** Answers once the dispatcher has nothing in flight or unrecorded, with the deliveries by status. */
  | { readonly type: 'drain' }
  | { readonly type: 'prepare-calls'; readonly count: number }
  | { readonly type: 'outcomes'; readonly perSecond: number }
  | { readonly type: 'stats' }
  | { readonly type: 'profile-start' }
  | { readonly type: 'profile-stop'; readonly file: string }
  | { readonly type: 'stop' };

const send = (message: DispatcherMessage) => sendToParent(message);

const { loadConfig } = await fromDist<typeof import('../src/config.js')>('config.js');
const { createServices } = await fromDist<typeof import('../src/container.js')>('container.js');
const { createAccount } = await fromDist<typeof import('../src/features/identity/accounts.service.js')>(
  'features/identity/accounts.service.js',
);
const { upsertAgent } = await fromDist<typeof import('../src/features/agents/agents.service.js')>('features/agents/agents.service.js');
const { createEndpoint } = await fromDist<typeof import('../src/features/webhook-endpoints/endpoints.service.js')>(
  'features/webhooks/endpoints.service.js',
);
const { enqueueEvent } = await fromDist<typeof import('../src/features/events/events.service.js')>('features/webhooks/events.service.js');
const { recordOutcome } = await fromDist<typeof import('../src/features/calls/calls.service.js')>('features/calls/calls.service.js');
const { newId } = await fromDist<typeof import('../src/lib/ids.js')>('lib/ids.js');

type Services = Awaited<ReturnType<typeof createServices>>;

const agentId = 'agent_bench';

/** The `data` of a call.completed event, shaped and sized as the call monitor writes it. */
function completedCall(callId: string, endedAt: Date) {
  return {
    id: callId,
    agent_id: agentId,
    status: 'completed' as const,
    duration_seconds: 95,
    transcript_summary: 'The agent reached the contact, confirmed the appointment and answered a question about parking.',
    started_at: new Date(endedAt.getTime() - 95_000).toISOString(),
    ended_at: endedAt.toISOString(),
  };
}

async function fillBacklog(services: Services, accountId: string, message: Extract<DispatcherRequest, { type: 'backlog' }>) {
  const started = wallClockMs();
  let next = 0;
  const lane = async () => {
    while (next < message.events) {
      const size = Math.min(message.batchSize, message.events - next);
      next += size;
      await services.db.transaction().execute(async (trx) => {
        for (let i = 0; i < size; i++) {
          const now = services.clock.now();
          const data = completedCall(newId('call', now.getTime()), now);
          await enqueueEvent(trx, services.clock, { accountId, mode: 'test', type: 'call.completed', callId: null, data });
        }
      });
    }
  };
  await Promise.all(Array.from({ length: message.parallel }, lane));
  // A production database has statistics (autovacuum analyses a table soon after it changes); without them
  // PostgreSQL plans the claim's subquery on this new table as a sort of every pending row. SQLite gathers
  // none unless told, and the service never tells it, so it goes without here too.
  if (services.database.dialect === 'postgres')
    await sql`analyze webhook_deliveries, webhook_events, webhook_endpoints`.execute(services.db);
  // The peak memory reported is the worker's, not that of writing the backlog.
  global.gc?.();
  resetPeakRss();
  send({ type: 'backlog-done', events: message.events, ms: wallClockMs() - started });
}

/** Calls still `initiated`, looked at by nobody for an hour (the monitor leaves them alone), ready to end. */
async function prepareCalls(services: Services, accountId: string, agentRef: string, count: number): Promise<string[]> {
  const now = services.clock.now();
  const at = now.toISOString();
  const ids = Array.from({ length: count }, () => newId('call', now.getTime()));
  await services.db.transaction().execute(async (trx) => {
    for (let i = 0; i < ids.length; i += 500) {
      const rows = ids.slice(i, i + 500).map((id) => ({
        id,
        account_id: accountId,
        api_key_id: 'key_bench',
        agent_id: agentId,
        agent_ref: agentRef,
        mode: 'live' as const,
        provider: 'simulator' as const,
        provider_conversation_id: id.replace(/^call_/, 'conv_'),
        to_number: '+14155550123',
        metadata: null,
        status: 'initiated' as const,
        created_at: at,
        updated_at: at,
        next_check_at: new Date(now.getTime() + 3_600_000).toISOString(),
      }));
      await trx.insertInto('calls').values(rows).execute();
    }
  });
  return ids;
}

/**
 * Ends the prepared calls at a steady rate, as the call monitor would: recordOutcome (the call's new state and
 * its event in one transaction), then a wake-up for the dispatcher. Each outcome starts on schedule whether or
 * not the previous one has committed.
 */
async function recordOutcomes(services: Services, callIds: readonly string[], perSecond: number) {
  const intervalMs = 1000 / perSecond;
  const committed: [string, number][] = [];
  const pending: Promise<void>[] = [];
  let lagMaxMs = 0;
  const start = wallClockMs();
  for (let i = 0; i < callIds.length; i++) {
    const due = start + i * intervalMs;
    const wait = due - wallClockMs();
    if (wait > 0) await sleep(wait);
    lagMaxMs = Math.max(lagMaxMs, wallClockMs() - due);
    const callId = callIds[i]!;
    const endedAt = services.clock.now();
    const outcome = {
      status: 'completed' as const,
      startedAt: new Date(endedAt.getTime() - 95_000),
      endedAt,
      durationSeconds: 95,
      transcriptSummary: 'The agent reached the contact, confirmed the appointment and answered a question about parking.',
    };
    pending.push(
      recordOutcome(services.db, services.clock, callId, outcome).then((recorded) => {
        committed.push([callId, wallClockMs()]);
        if (recorded.deliveries > 0) services.notifier.notify();
      }),
    );
  }
  await Promise.all(pending);
  // The receiver knows events by id; the call's event is the one with its call_id.
  const eventOf = new Map<string, string>();
  for (let i = 0; i < callIds.length; i += 500) {
    const rows = await services.db
      .selectFrom('webhook_events')
      .select(['id', 'call_id'])
      .where('call_id', 'in', callIds.slice(i, i + 500))
      .execute();
    for (const row of rows) eventOf.set(row.call_id!, row.id);
  }
  const commits = committed.map(([callId, at]) => [eventOf.get(callId) ?? `(no event for ${callId})`, at] as const);
  send({ type: 'outcomes-done', commits, lagMaxMs });
}

async function drain(services: Services) {
  await services.dispatcher.idle();
  const atMs = wallClockMs();
  const rows = await services.db
    .selectFrom('webhook_deliveries')
    .select((eb) => ['status', eb.fn.countAll<string | number>().as('n')])
    .groupBy('status')
    .execute();
  const attempts = await services.db
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirstOrThrow();
  const deliveries = Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]));
  send({ type: 'drained', atMs, deliveries, attempts: Number(attempts.n) });
}

async function main(): Promise<void> {
  watchEventLoop();
  const receiverUrl = process.env.BENCH_RECEIVER_URL;
  if (!receiverUrl) throw new Error('BENCH_RECEIVER_URL is not set');
  const services = await createServices(loadConfig());
  const { db, clock } = services;
  const account = await createAccount(db, clock, { name: 'Benchmark' });
  const { agent } = await upsertAgent(db, clock, { accountId: account.id, agentId, name: 'Benchmark agent', provider: 'simulator' });
  const endpoint = await createEndpoint(db, clock, services.config.webhookAllowPrivate, { accountId: account.id, url: receiverUrl });
  let callIds: string[] = [];
  const profiler = cpuProfiler();

  onParentRequest(async (message: DispatcherRequest) => {
    switch (message.type) {
      case 'backlog':
        return fillBacklog(services, account.id, message);
      case 'start-worker':
        services.startWorker();
        return send({ type: 'worker-started', atMs: wallClockMs() });
      case 'drain':
        return drain(services);
      case 'prepare-calls':
        callIds = await prepareCalls(services, account.id, agent.id, message.count);
        return send({ type: 'calls-prepared', count: callIds.length });
      case 'outcomes':
        return recordOutcomes(services, callIds, message.perSecond);
      case 'stats':
        return send({ type: 'stats', stats: processStats() });
      case 'profile-start':
        await profiler.start();
        return send({ type: 'profile-started' });
      case 'profile-stop':
        await profiler.stop(message.file);
        return send({ type: 'profile-stopped' });
      case 'stop':
        await services.close();
        send({ type: 'stopped' });
        process.disconnect();
        return;
    }
  });
  send({ type: 'ready', secret: endpoint.secret, concurrency: services.config.webhookConcurrency });
}

runServiceChild('bench/dispatcher-process.ts', main);
