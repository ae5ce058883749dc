/**
 * Charts drawn on the server as inline SVG: no script, no asset from elsewhere, colours from portal.css.
 * Each chart is an image with a title and a description that give its totals in words; each bar or point
 * has its own tooltip (an SVG <title>), and a visually hidden table beside it holds every figure for screen
 * readers.
 */
import type { ChartSeries, ChartSlot } from '../portal-charts.service.js';
import type { SlotUnit } from '../../lib/time-slots.js';
import { html, type SafeHtml } from '../../lib/html.js';

/**
 * The drawing's own coordinates; the SVG scales to its container's width. A chart is drawn about as wide as
 * it shows (`wide` across the card, else half of it), so that its text keeps the page's size.
 */
const height = 250;
// right: room for half of the last slot's label beyond the plot (`24 Nov` under a half-width chart).
const plot = { left: 60, right: 24, top: 14, bottom: 46 } as const;
const plotHeight = height - plot.top - plot.bottom;

interface Frame {
  readonly width: number;
  readonly plotWidth: number;
}

function frameOf(wide: boolean | undefined): Frame {
  const width = wide ? 1080 : 540;
  return { width, plotWidth: width - plot.left - plot.right };
}

const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A slot as its axis shows it: `09:00` for an hour, `24 Nov` for a day. */
function shortLabel(slot: ChartSlot, unit: SlotUnit): string {
  const date = slot.start;
  if (unit === 'hour') return `${String(date.getUTCHours()).padStart(2, '0')}:00`;
  return `${date.getUTCDate()} ${months[date.getUTCMonth()]}`;
}

/** A slot in full, for tooltips and the hidden table: `24 Nov 09:00–10:00 UTC`, `24 Nov 2026 (UTC)`. */
export function slotLabel(slot: ChartSlot, unit: SlotUnit): string {
  const date = slot.start;
  const day = `${date.getUTCDate()} ${months[date.getUTCMonth()]}`;
  if (unit === 'day') return `${day} ${date.getUTCFullYear()} (UTC)`;
  const hour = date.getUTCHours();
  return `${day} ${String(hour).padStart(2, '0')}:00–${String((hour + 1) % 24).padStart(2, '0')}:00 UTC`;
}

/** A round top for the y axis (1, 2 or 5 times a power of ten) and its ticks. */
function yScale(max: number): { top: number; ticks: number[] } {
  if (max <= 0) return { top: 4, ticks: [0, 1, 2, 3, 4] };
  const rough = max / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough) ?? 10 * power;
  const top = Math.ceil(max / step) * step;
  const ticks: number[] = [];
  for (let tick = 0; tick <= top + step / 2; tick += step) ticks.push(Number(tick.toPrecision(12)));
  return { top, ticks };
}

/** A number as an axis or a tooltip shows it: `1,200`, `12.5`, `0.25`. */
export function formatNumber(value: number): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return Number(value.toFixed(digits)).toLocaleString('en-US');
}

const xOf = (f: Frame, index: number, slots: number) => plot.left + (f.plotWidth * (index + 0.5)) / slots;
const yOf = (value: number, top: number) => plot.top + plotHeight - (plotHeight * value) / top;

/** Axes, grid lines, tick labels and axis titles. */
function axes(
  f: Frame,
  input: { slots: readonly ChartSlot[]; unit: SlotUnit; top: number; ticks: number[]; yTitle: string; xTitle: string },
) {
  const every = input.unit === 'hour' ? 3 : 5;
  const last = input.slots.length - 1;
  const yTitleX = 14;
  const yTitleY = plot.top + plotHeight / 2;
  return html`<g class="chart-grid" aria-hidden="true">${input.ticks.map((tick) => {
    const y = yOf(tick, input.top).toFixed(1);
    return html`<line x1="${String(plot.left)}" x2="${String(f.width - plot.right)}" y1="${y}" y2="${y}"></line><text class="chart-tick" x="${String(plot.left - 6)}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatNumber(tick)}</text>`;
  })}</g>
<g class="chart-axis" aria-hidden="true"><line x1="${String(plot.left)}" x2="${String(f.width - plot.right)}" y1="${String(plot.top + plotHeight)}" y2="${String(plot.top + plotHeight)}"></line>${input.slots.map(
    (slot, index) =>
      // Every third hour or fifth day, counted back from now so that the latest slot is always named.
      (last - index) % every === 0
        ? html`<text class="chart-tick" x="${xOf(f, index, input.slots.length).toFixed(1)}" y="${String(plot.top + plotHeight + 16)}" text-anchor="middle">${shortLabel(slot, input.unit)}</text>`
        : '',
  )}
<text class="chart-axis-title" x="${String(plot.left + f.plotWidth / 2)}" y="${String(height - 6)}" text-anchor="middle">${input.xTitle}</text>
<text class="chart-axis-title" x="${String(yTitleX)}" y="${String(yTitleY)}" text-anchor="middle" transform="rotate(-90 ${String(yTitleX)} ${String(yTitleY)})">${input.yTitle}</text></g>`;
}

export interface ChartText {
  /** The element id the chart's title and description hang from. */
  readonly id: string;
  readonly title: string;
  /** The totals in words: the description of the image. */
  readonly summary: string;
  readonly yTitle: string;
  readonly xTitle: string;
  /** Shown across an empty chart (once: its plot, nowhere else), e.g. `No calls in the last 24 hours.` */
  readonly emptyText: string;
  /** Drawn across the whole card rather than half of it. */
  readonly wide?: boolean;
  /** The hidden table's caption and its first column's heading. */
  readonly tableCaption: string;
  readonly unit: SlotUnit;
}

function frame(f: Frame, text: ChartText, empty: boolean, body: SafeHtml) {
  return html`<svg class="chart" viewBox="0 0 ${String(f.width)} ${String(height)}" role="img" aria-labelledby="${text.id}-title ${text.id}-desc" focusable="false">
<title id="${text.id}-title">${text.title}</title>
<desc id="${text.id}-desc">${text.summary}</desc>
${body}
${empty ? html`<text class="chart-empty" x="${String(plot.left + f.plotWidth / 2)}" y="${String(plot.top + plotHeight / 2)}" text-anchor="middle" dominant-baseline="middle">${text.emptyText}</text>` : ''}
</svg>`;
}

function legend(series: readonly ChartSeries<unknown>[], totals: readonly string[], label: string) {
  return html`<ul class="chart-legend" aria-label="${label}">${series.map(
    (line, index) =>
      html`<li><span class="chart-key series-${line.key}" aria-hidden="true"></span>${line.label} <strong>${totals[index] ?? ''}</strong></li>`,
  )}</ul>`;
}

/** Every slot with a value, as a table only screen readers read (the chart is the view for the eye). */
function hiddenTable(
  text: ChartText,
  slots: readonly ChartSlot[],
  series: readonly ChartSeries<number | null>[],
  format: (value: number | null) => string,
) {
  const rows = slots.flatMap((slot, index) =>
    series.some((line) => (line.values[index] ?? 0) !== 0 && line.values[index] !== null)
      ? [
          html`<tr><th scope="row">${slotLabel(slot, text.unit)}</th>${series.map((line) => html`<td>${format(line.values[index] ?? null)}</td>`)}</tr>`,
        ]
      : [],
  );
  if (rows.length === 0) return '';
  // The wrapper hides it: a table takes its content's width whatever its own width and overflow say.
  return html`<div class="visually-hidden"><table id="${text.id}-table">
<caption>${text.tableCaption} (${text.unit === 'hour' ? 'hours' : 'days'} without any are left out)</caption>
<thead><tr><th scope="col">${text.unit === 'hour' ? 'Hour' : 'Day'}</th>${series.map((line) => html`<th scope="col">${line.label}</th>`)}</tr></thead>
<tbody>${rows}</tbody>
</table></div>`;
}

/**
 * Stacked bars, one per slot, in the order of `series` from the bottom; a legend with each series' total
 * (only the series that have any, so that the legend says what happened rather than what could have).
 */
export function stackedBarChart(text: ChartText, slots: readonly ChartSlot[], series: readonly ChartSeries<number>[]): SafeHtml {
  const stackTotals = slots.map((_, index) => series.reduce((sum, line) => sum + (line.values[index] ?? 0), 0));
  const { top, ticks } = yScale(Math.max(0, ...stackTotals));
  const shown = series.filter((line) => line.values.some((value) => value > 0));
  const f = frameOf(text.wide);
  const barWidth = (f.plotWidth / slots.length) * 0.72;
  const bars = slots.map((slot, index) => {
    if ((stackTotals[index] ?? 0) === 0) return '';
    let base = 0;
    const parts: string[] = [];
    const rects = shown.map((line) => {
      const value = line.values[index] ?? 0;
      if (value === 0) return '';
      parts.push(`${value} ${line.label.toLowerCase()}`);
      const y0 = yOf(base, top);
      base += value;
      const y1 = yOf(base, top);
      return html`<rect class="series-${line.key}" x="${(xOf(f, index, slots.length) - barWidth / 2).toFixed(1)}" y="${y1.toFixed(1)}" width="${barWidth.toFixed(1)}" height="${Math.max(0.5, y0 - y1).toFixed(1)}"></rect>`;
    });
    return html`<g class="chart-bar"><title>${slotLabel(slot, text.unit)}: ${parts.join(', ')}</title>${rects}</g>`;
  });
  const empty = shown.length === 0;
  return html`<figure class="chart-figure">
${frame(f, text, empty, html`${axes(f, { slots, unit: text.unit, top, ticks, yTitle: text.yTitle, xTitle: text.xTitle })}<g class="chart-bars">${bars}</g>`)}
${
  // An empty chart says so across its plot, once: no legend, and no caption saying it again.
  empty
    ? ''
    : html`<figcaption>${legend(
        shown,
        shown.map((line) => formatNumber(line.values.reduce((sum, value) => sum + value, 0))),
        `${text.title}: totals`,
      )}</figcaption>`
}
${hiddenTable(text, slots, shown, (value) => formatNumber(value ?? 0))}
</figure>`;
}

/** Lines (with a dot per slot that has a value; a gap where a slot has none), a legend with `totals`. */
export function lineChart(
  text: ChartText,
  slots: readonly ChartSlot[],
  series: readonly ChartSeries<number | null>[],
  options: { readonly totals: readonly string[]; readonly format: (value: number) => string },
): SafeHtml {
  const values = series.flatMap((line) => line.values.filter((value): value is number => value !== null));
  const { top, ticks } = yScale(Math.max(0, ...values));
  const empty = values.length === 0;
  const f = frameOf(text.wide);
  const lines = series.map((line) => {
    const runs: string[][] = [[]];
    line.values.forEach((value, index) => {
      if (value === null) runs.push([]);
      else runs.at(-1)!.push(`${xOf(f, index, slots.length).toFixed(1)},${yOf(value, top).toFixed(1)}`);
    });
    const paths = runs
      .filter((run) => run.length > 1)
      .map((run) => html`<polyline class="series-${line.key}" points="${run.join(' ')}"></polyline>`);
    const dots = line.values.map((value, index) =>
      value === null
        ? ''
        : html`<circle class="series-${line.key}" cx="${xOf(f, index, slots.length).toFixed(1)}" cy="${yOf(value, top).toFixed(1)}" r="3"><title>${slotLabel(slots[index]!, text.unit)}: ${line.label} ${options.format(value)}</title></circle>`,
    );
    return html`<g class="chart-line">${paths}${dots}</g>`;
  });
  return html`<figure class="chart-figure">
${frame(f, text, empty, html`${axes(f, { slots, unit: text.unit, top, ticks, yTitle: text.yTitle, xTitle: text.xTitle })}${lines}`)}
${empty ? '' : html`<figcaption>${legend(series, options.totals, `${text.title}: over the period`)}</figcaption>`}
${hiddenTable(text, slots, series, (value) => (value === null ? '—' : options.format(value)))}
</figure>`;
}
