/** Small readers and writers of the batches API for the batch tests, through the real app (inject). */
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import type { VoiceProvider } from '../../src/features/providers/provider.interface.js';
import type { ManualClock } from '../../src/lib/clock.js';
import { startTestApp, type TestApp } from './test-app.js';
import type { Dialect } from './test-database.js';

/** A batch's fields as the API answers it, sorted. */
export const batchFields = [
  'agent_id',
  'calling_window',
  'completed_at',
  'counts',
  'created_at',
  'id',
  'livemode',
  'max_concurrency',
  'name',
  'retry',
  'scheduled_at',
  'status',
];

/**
 * The app on `clock` with `provider` as its simulator, the batch dialer and the call monitor started but
 * passing only when a test asks (their sweeps never come by themselves within a test).
 */
export async function startHandRunDialer(
  dialect: Dialect,
  options: { readonly clock: ManualClock; readonly provider: VoiceProvider; readonly random?: () => number },
): Promise<TestApp> {
  const never = 24 * 3600_000;
  const t = await startTestApp(dialect, {
    overrides: {
      clock: options.clock,
      providers: createProviderRegistry({ simulator: options.provider }),
      ...(options.random ? { random: options.random } : {}),
      dialerSweepIntervalMs: never,
      monitorSweepIntervalMs: never,
      dispatcherSweepIntervalMs: never,
      dialSweepIntervalMs: never,
    },
  });
  t.services.jobs.start([t.services.batchDialer.name, t.services.callMonitor.name, t.services.dialJob.name]);
  return t;
}

/** One dialer pass and the dials it started. */
export async function dialerPass(t: TestApp): Promise<void> {
  await t.services.batchDialer.pass();
  await t.services.batchDialer.idle();
}

/** `count` distinct valid numbers, +1415555 followed by four digits from `first`. */
export function numbers(count: number, first = 1000): string[] {
  return Array.from({ length: count }, (_, index) => `+1415555${String(first + index).padStart(4, '0')}`);
}

export function recipientsFor(tos: readonly string[]): { to: string; reference: string; metadata: Record<string, string | number> }[] {
  return tos.map((to, index) => ({ to, reference: `ref-${index}`, metadata: { customer_name: `Customer ${index}`, n: index } }));
}

/** A POST of a JSON body to the API with a Bearer key (the seed's by default) and an optional Idempotency-Key. */
export function postApi(
  t: TestApp,
  url: string,
  body: unknown,
  options: { token?: string; idempotencyKey?: string } = {},
): Promise<LightMyRequestResponse> {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${options.token ?? t.seed.token}` };
  if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
  return t.inject({ method: 'POST', url, headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}

export function postBatch(
  t: TestApp,
  body: unknown,
  options: { token?: string; idempotencyKey?: string } = {},
): Promise<LightMyRequestResponse> {
  return postApi(t, '/v1/batches', body, options);
}

/** Creates a batch of the seed agent (or `agent_id` in `extra`) and returns it; fails the test otherwise. */
export async function createBatch(
  t: TestApp,
  tos: readonly string[],
  extra: Record<string, unknown> = {},
  options: { token?: string } = {},
): Promise<Record<string, any>> {
  const res = await postBatch(t, { agent_id: t.seed.agentId, recipients: recipientsFor(tos), ...extra }, options);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

export function apiGet(t: TestApp, url: string, token = t.seed.token): Promise<LightMyRequestResponse> {
  return t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
}

export function apiPost(t: TestApp, url: string, token = t.seed.token): Promise<LightMyRequestResponse> {
  return t.inject({ method: 'POST', url, headers: { authorization: `Bearer ${token}` } });
}

export async function readBatch(t: TestApp, id: string, token = t.seed.token): Promise<Record<string, any>> {
  const res = await apiGet(t, `/v1/batches/${id}`, token);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Every recipient of a batch, in the order sent (all pages). */
export async function allRecipients(t: TestApp, id: string, token = t.seed.token): Promise<Record<string, any>[]> {
  const all: Record<string, any>[] = [];
  for (let after: string | undefined; ; ) {
    const res = await apiGet(t, `/v1/batches/${id}/recipients?limit=100${after ? `&starting_after=${after}` : ''}`, token);
    assert.equal(res.statusCode, 200, res.body);
    const page = res.json() as { data: Record<string, any>[]; has_more: boolean };
    all.push(...page.data);
    if (!page.has_more) return all;
    after = page.data.at(-1)!.id as string;
  }
}

/** The most intervals [start, end) that overlap at one instant. */
export function highestOverlap(intervals: readonly { start: number; end: number }[]): number {
  const edges = intervals.flatMap(({ start, end }) => [
    { at: start, delta: 1 },
    { at: end, delta: -1 },
  ]);
  // An end and a start at the same instant do not overlap: ends first.
  edges.sort((a, b) => a.at - b.at || a.delta - b.delta);
  let current = 0;
  let highest = 0;
  for (const edge of edges) highest = Math.max(highest, (current += edge.delta));
  return highest;
}
