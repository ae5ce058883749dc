/**
 * UTC hours and days as the charts count them: the first 13 (`2026-11-24T09`) or 10 (`2026-11-24`)
 * characters of an ISO 8601 UTC timestamp, so that a GROUP BY on `substr(created_at, 1, n)` reads the same
 * on both databases (timestamps are text in both) and text order is time order.
 */
export type SlotUnit = 'hour' | 'day';

export const slotLength: Record<SlotUnit, 13 | 10> = { hour: 13, day: 10 };

const unitMs: Record<SlotUnit, number> = { hour: 60 * 60 * 1000, day: 24 * 60 * 60 * 1000 };

/** The slot a timestamp falls in. */
export function slotOf(iso: string, unit: SlotUnit): string {
  return iso.slice(0, slotLength[unit]);
}

/** The `count` slots that end with the one holding `now`, oldest first, each with the time it starts. */
export function lastSlots(now: Date, unit: SlotUnit, count: number): { readonly key: string; readonly start: Date }[] {
  const step = unitMs[unit];
  const current = Math.floor(now.getTime() / step) * step;
  return Array.from({ length: count }, (_, index) => {
    const start = new Date(current - (count - 1 - index) * step);
    return { key: slotOf(start.toISOString(), unit), start };
  });
}
