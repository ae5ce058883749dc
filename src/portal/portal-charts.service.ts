/**
 * The overview's charts: the account's calls by outcome, its webhook deliveries by how they went and the
 * latency of its POST /v1/calls, per UTC hour over the last 24 hours or per UTC day over the last 30 days, in
 * one mode. Each count comes from its feature's service (an indexed GROUP BY, or the request log's hourly
 * latency rollup); this module lays them out slot by slot for the views.
 */
import type { Db } from '../db/database.js';
import type { Clock } from '../lib/clock.js';
import { lastSlots, slotOf, type SlotUnit } from '../lib/time-slots.js';
import type { ApiKeyMode } from '../features/api-keys/api-keys.tables.js';
import { countCallOutcomes } from '../features/calls/calls.service.js';
import { failureReasons, type FailureReason } from '../features/providers/provider.interface.js';
import { bucketGrowthPercent, quantileMs, type LatencyHistogram } from '../features/request-log/request-log-latency.js';
import { latencyByHour } from '../features/request-log/request-log.service.js';
import { countDeliveryStates } from '../features/webhook-delivery/deliveries.service.js';

export const chartPeriods = ['24h', '30d'] as const;
export type ChartPeriod = (typeof chartPeriods)[number];

/** 24 hourly slots, or 30 daily ones: per hour over 30 days would be 720 bars too thin to read or hover. */
const periodSlots: Record<ChartPeriod, { readonly unit: SlotUnit; readonly count: number }> = {
  '24h': { unit: 'hour', count: 24 },
  '30d': { unit: 'day', count: 30 },
};

export interface ChartSlot {
  /** `2026-11-24T09` or `2026-11-24`. */
  readonly key: string;
  readonly start: Date;
}

export interface ChartSeries<V> {
  /** A CSS-safe name, also the class of its marks (`series-<key>`). */
  readonly key: string;
  readonly label: string;
  /** One value per slot. */
  readonly values: readonly V[];
}

export interface OverviewCharts {
  readonly period: ChartPeriod;
  readonly mode: ApiKeyMode;
  readonly unit: SlotUnit;
  readonly slots: readonly ChartSlot[];
  readonly calls: readonly ChartSeries<number>[];
  readonly deliveries: readonly ChartSeries<number>[];
  /** Deliveries not attempted yet, in none of the series. */
  readonly deliveriesWaiting: number;
  /** p50 and p99 in ms per slot (null: no request in it). */
  readonly latency: readonly ChartSeries<number | null>[];
  /** The same over the whole period. */
  readonly latencyOverall: { readonly p50: number | null; readonly p99: number | null; readonly requests: number };
  readonly bucketGrowthPercent: number;
}

type CallSeriesKey = 'completed' | `failed-${FailureReason}` | 'initiated';

const callSeries: readonly { key: CallSeriesKey; label: string }[] = [
  { key: 'completed', label: 'Completed' },
  ...failureReasons.map((reason) => ({ key: `failed-${reason}` as const, label: `Failed: ${reason}` })),
  { key: 'initiated', label: 'In progress' },
];

const deliverySeries = [
  { key: 'succeeded', label: 'Succeeded at once' },
  { key: 'retried', label: 'Retried' },
  { key: 'failed', label: 'Failed' },
] as const;

function callSeriesOf(status: string, reason: string | null): CallSeriesKey {
  if (status === 'completed') return 'completed';
  if (status === 'initiated') return 'initiated';
  // A reason this version does not know is shown as the API shows a missing one.
  const known = failureReasons.find((candidate) => candidate === reason);
  return `failed-${known ?? 'unknown'}`;
}

/** Series of counts, one value per slot, from rows that each name a slot, a series and a count. */
function tally<K extends string>(
  slots: readonly ChartSlot[],
  series: readonly { key: K; label: string }[],
  rows: Iterable<{ slot: string; series: K; count: number }>,
): ChartSeries<number>[] {
  const index = new Map(slots.map((slot, position) => [slot.key, position]));
  const values = new Map(series.map(({ key }) => [key, slots.map(() => 0)]));
  for (const row of rows) {
    const position = index.get(row.slot);
    const line = values.get(row.series);
    if (position !== undefined && line) line[position] = (line[position] ?? 0) + row.count;
  }
  return series.map(({ key, label }) => ({ key, label, values: values.get(key) ?? [] }));
}

function merge(into: LatencyHistogram, from: LatencyHistogram): void {
  for (const [bucket, count] of from) into.set(bucket, (into.get(bucket) ?? 0) + count);
}

export async function loadOverviewCharts(
  db: Db,
  clock: Clock,
  accountId: string,
  options: { readonly period: ChartPeriod; readonly mode: ApiKeyMode },
): Promise<OverviewCharts> {
  const { unit, count } = periodSlots[options.period];
  const slots = lastSlots(clock.now(), unit, count);
  const since = slots[0]!.start;
  const [callRows, deliveryRows, latencyRows] = await Promise.all([
    countCallOutcomes(db, accountId, options.mode, since, unit),
    countDeliveryStates(db, accountId, options.mode, since, unit),
    latencyByHour(db, accountId, options.mode, since),
  ]);

  const calls = tally(
    slots,
    callSeries,
    callRows.map((row) => ({ slot: row.slot, series: callSeriesOf(row.status, row.failure_reason), count: row.count })),
  );

  let deliveriesWaiting = 0;
  const deliveryTally: { slot: string; series: (typeof deliverySeries)[number]['key']; count: number }[] = [];
  for (const row of deliveryRows) {
    if (row.status === 'failed') deliveryTally.push({ slot: row.slot, series: 'failed', count: row.count });
    else if (row.attempt_count > 1) deliveryTally.push({ slot: row.slot, series: 'retried', count: row.count });
    else if (row.status === 'succeeded') deliveryTally.push({ slot: row.slot, series: 'succeeded', count: row.count });
    else if (row.attempt_count === 0) deliveriesWaiting += row.count;
    // Pending after one failed attempt: waiting for its retry.
    else deliveryTally.push({ slot: row.slot, series: 'retried', count: row.count });
  }

  const perSlot = new Map(slots.map((slot) => [slot.key, new Map<number, number>()]));
  const overall: LatencyHistogram = new Map();
  let requests = 0;
  for (const [hour, histogram] of latencyRows) {
    const slotHistogram = perSlot.get(slotOf(hour, unit));
    if (!slotHistogram) continue;
    merge(slotHistogram, histogram);
    merge(overall, histogram);
    for (const value of histogram.values()) requests += value;
  }
  const quantiles = (q: number) => slots.map((slot) => quantileMs(perSlot.get(slot.key) ?? new Map(), q));

  return {
    period: options.period,
    mode: options.mode,
    unit,
    slots,
    calls,
    deliveries: tally(slots, deliverySeries, deliveryTally),
    deliveriesWaiting,
    latency: [
      { key: 'p50', label: 'p50', values: quantiles(0.5) },
      { key: 'p99', label: 'p99', values: quantiles(0.99) },
    ],
    latencyOverall: { p50: quantileMs(overall, 0.5), p99: quantileMs(overall, 0.99), requests },
    bucketGrowthPercent,
  };
}
