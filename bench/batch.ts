/**
 * Batch dialing against a provider with real latency: a live-mode batch through the ElevenLabs adapter to
 * the fake of bench/fake-elevenlabs.ts (answers after 300–1,500 ms, post-call webhook 5–10 s later), timed
 * from the batch's created_at to its completed_at against its physical limit: a no-wait replay of the very
 * dials the fake saw (each dial's create + call time, in the order they came, each started the instant a
 * slot frees). The older ideal, recipients / concurrency × the mean slot time, is kept beside it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { cli, createAccount, createDatabase, freePort, percentile, startScript, startServer, type Dialect } from './harness.js';

export interface BatchSettings {
  readonly recipients: number;
  readonly maxConcurrency: number;
  /** The share of creates whose answer the fake loses (half of them placed the call): 0 by default. */
  readonly loseAnswerRate?: number;
}

export interface BatchResult {
  readonly recipients: number;
  readonly maxConcurrency: number;
  readonly status: string;
  readonly elapsedS: number;
  readonly idealS: number;
  /** noWaitS / elapsed: 1 is a batch that never left a slot empty. */
  readonly ratio: number;
  /** The same dials replayed with no wait at all, in the order they came: the physical limit. */
  readonly noWaitS: number;
  /** Peak RSS of the server while it dialed the batch. */
  readonly peakRssMb: number;
  readonly highestConcurrency: number;
  readonly freedSlotWaitP50Ms: number;
  readonly freedSlotWaitP99Ms: number;
  readonly providerCalls: number;
  readonly lostAnswers: number;
  readonly lostNotPlaced: number;
  /** Numbers the fake saw called more than once (must be 0). */
  readonly dialedTwice: number;
  /** Recipients that did not end completed (0 without lost answers: every call completes at the fake). */
  readonly notCompleted: number;
  /** Recipients that failed: with lost answers, those whose dial and redial both placed nothing (final). */
  readonly failed: number;
  /** Recipients not final when the batch ended or the wait gave up (must be 0). */
  readonly notFinal: number;
  readonly webhookFailures: number;
}

interface FakeStats {
  calls: number;
  maxActive: number;
  lostAnswers: number;
  lostNotPlaced: number;
  dialedTwice: number;
  webhookFailures: number;
  slotMs: number[];
  dialMs: number[];
  freedSlotWaitMs: number[];
}

interface Batch {
  id: string;
  status: string;
  counts: { completed: number; failed: number; cancelled: number; total: number };
  created_at: string;
  completed_at: string | null;
}

const agentId = 'agent_bench_elevenlabs';
const phoneNumberId = 'phnum_bench';
const elevenlabs = { ELEVENLABS_API_KEY: 'xi_bench_key', ELEVENLABS_WEBHOOK_SECRET: 'bench_webhook_secret' };

export async function batchRun(dialect: Dialect, settings: BatchSettings): Promise<BatchResult> {
  const database = await createDatabase(dialect);
  const [serverPort, fakePort] = [await freePort(), await freePort()];
  // The fake answers within 1.5 s and lists a call the moment it is asked to place it, so a window of 2.5 s
  // is a true bound for it (ElevenLabs' listing delay is unknown: the default stays 2m).
  const env = {
    ...elevenlabs,
    ELEVENLABS_BASE_URL: `http://127.0.0.1:${fakePort}`,
    CALLGATE_PROVIDER_TIMEOUT_MS: '2000',
    CALLGATE_DIAL_SEARCH_WINDOW: '2500ms',
  };
  const fake = await startScript('fake-elevenlabs.ts', fakePort, {
    FAKE_API_KEY: elevenlabs.ELEVENLABS_API_KEY,
    FAKE_WEBHOOK_SECRET: elevenlabs.ELEVENLABS_WEBHOOK_SECRET,
    FAKE_WEBHOOK_URL: `http://127.0.0.1:${serverPort}/providers/elevenlabs/webhook`,
    FAKE_PHONE_NUMBER_ID: phoneNumberId,
    FAKE_LOSE_ANSWER_RATE: String(settings.loseAnswerRate ?? 0),
  });
  try {
    const { accountId, token } = await createAccount(database, 'live', env);
    const agent = ['agents', 'add', '--account', accountId, '--agent-id', agentId, '--name', 'Bench', '--provider', 'elevenlabs'];
    await cli(database, [...agent, '--phone-number-id', phoneNumberId], env);
    const server = await startServer(database, env, serverPort);
    try {
      const batch = await dialBatch(server.url, token, settings);
      const stats = (await (await fetch(`${fake.url}/stats`)).json()) as FakeStats;
      return summarise(batch, stats, settings, server.peakRssMb());
    } finally {
      await server.stop();
    }
  } finally {
    await fake.stop();
    await database.drop();
  }
}

/** Creates the batch and polls it until it has ended (or clearly never will). */
async function dialBatch(url: string, token: string, settings: BatchSettings): Promise<Batch> {
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const recipients = Array.from({ length: settings.recipients }, (_, i) => ({ to: `+1415${String(2_000_000 + i).padStart(7, '0')}` }));
  const created = await fetch(`${url}/v1/batches`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ agent_id: agentId, recipients, max_concurrency: settings.maxConcurrency, name: 'bench' }),
  });
  if (created.status !== 201) throw new Error(`POST /v1/batches answered ${created.status}: ${await created.text()}`);
  let batch = (await created.json()) as Batch;
  // Three times the ideal of the slowest calls the fake makes, then it is stuck.
  const deadline = Date.now() + (settings.recipients / settings.maxConcurrency) * 11_500 * 3 + 60_000;
  while (batch.completed_at === null && Date.now() < deadline) {
    await sleep(250);
    batch = (await (await fetch(`${url}/v1/batches/${batch.id}`, { headers })).json()) as Batch;
  }
  return batch;
}

function summarise(batch: Batch, stats: FakeStats, settings: BatchSettings, peakRssMb: number): BatchResult {
  const meanSlotMs = stats.slotMs.reduce((sum, ms) => sum + ms, 0) / Math.max(1, stats.slotMs.length);
  const idealS = ((settings.recipients / settings.maxConcurrency) * meanSlotMs) / 1000;
  const elapsedS = batch.completed_at === null ? Number.NaN : (Date.parse(batch.completed_at) - Date.parse(batch.created_at)) / 1000;
  const waits = [...stats.freedSlotWaitMs].sort((a, b) => a - b);
  const replayS = noWaitS(stats.dialMs, settings.maxConcurrency);
  return {
    recipients: settings.recipients,
    maxConcurrency: settings.maxConcurrency,
    status: batch.status,
    elapsedS,
    idealS,
    ratio: replayS / elapsedS,
    noWaitS: replayS,
    peakRssMb,
    highestConcurrency: stats.maxActive,
    freedSlotWaitP50Ms: percentile(waits, 50),
    freedSlotWaitP99Ms: percentile(waits, 99),
    providerCalls: stats.calls,
    lostAnswers: stats.lostAnswers,
    lostNotPlaced: stats.lostNotPlaced,
    dialedTwice: stats.dialedTwice,
    notCompleted: settings.recipients - (batch.counts?.completed ?? 0),
    failed: batch.counts?.failed ?? 0,
    notFinal: settings.recipients - (batch.counts?.completed ?? 0) - (batch.counts?.failed ?? 0) - (batch.counts?.cancelled ?? 0),
    webhookFailures: stats.webhookFailures,
  };
}

/** When the last dial would end if each were started, in the order they came, on the slot that frees first. */
function noWaitS(dialMs: readonly number[], concurrency: number): number {
  const slots = new Array<number>(concurrency).fill(0);
  for (const ms of dialMs) {
    const free = slots.indexOf(Math.min(...slots));
    slots[free] = slots[free]! + ms;
  }
  return Math.max(...slots) / 1000;
}
