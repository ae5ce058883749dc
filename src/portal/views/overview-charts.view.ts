/** The overview's charts: calls by outcome, webhook deliveries and latency, with the period and mode switches. */
import type { ApiKeyMode } from '../../features/api-keys/api-keys.tables.js';
import type { ChartPeriod, ChartSeries, OverviewCharts } from '../portal-charts.service.js';
import { formatNumber, lineChart, stackedBarChart } from './charts.view.js';
import { html } from '../../lib/html.js';

const periodNames: Record<ChartPeriod, string> = { '24h': 'the last 24 hours', '30d': 'the last 30 days' };
const periodLinks: readonly [ChartPeriod, string][] = [
  ['24h', 'Last 24 hours'],
  ['30d', 'Last 30 days'],
];
const modeLinks: readonly [ApiKeyMode, string][] = [
  ['test', 'Test'],
  ['live', 'Live'],
];

/** The overview's address for a period and mode: plain links, so that the switches need no script. */
export function overviewUrl(period: ChartPeriod, mode: ApiKeyMode): string {
  return `/developers?period=${period}&mode=${mode}#activity`;
}

function switcher<T extends string>(label: string, options: readonly [T, string][], current: T, href: (value: T) => string) {
  return html`<ul class="switch" aria-label="${label}">${options.map(
    ([value, text]) => html`<li><a href="${href(value)}"${value === current ? html` aria-current="true"` : ''}>${text}</a></li>`,
  )}</ul>`;
}

const total = (series: readonly ChartSeries<number>[]) =>
  series.reduce((sum, line) => sum + line.values.reduce((lineSum, value) => lineSum + value, 0), 0);

/** "12 in all: 9 completed, 2 failed: busy" — the series that have any, in words. */
function inWords(series: readonly ChartSeries<number>[]): string {
  const parts = series
    .map((line) => [line.label.toLowerCase(), line.values.reduce((sum, value) => sum + value, 0)] as const)
    .filter(([, count]) => count > 0)
    .map(([label, count]) => `${formatNumber(count)} ${label}`);
  return `${formatNumber(total(series))} in all${parts.length > 0 ? `: ${parts.join(', ')}` : ''}`;
}

const ms = (value: number) => `${formatNumber(value)} ms`;

export function overviewCharts(charts: OverviewCharts) {
  const when = periodNames[charts.period];
  const perSlot = charts.unit === 'hour' ? 'hour' : 'day';
  const xTitle = charts.unit === 'hour' ? 'Hour (UTC)' : 'Day (UTC)';
  const common = { unit: charts.unit, xTitle };
  const { p50, p99, requests } = charts.latencyOverall;
  const waiting =
    charts.deliveriesWaiting > 0
      ? ` ${formatNumber(charts.deliveriesWaiting)} more ${charts.deliveriesWaiting === 1 ? 'is' : 'are'} waiting for a first attempt.`
      : '';
  return html`<section class="card" id="activity" aria-labelledby="activity-title">
  <div class="card-head chart-head">
    <h2 id="activity-title">Activity <span class="muted small">${when}, ${charts.mode} mode</span></h2>
    <nav class="chart-switches" aria-label="Period and mode of the charts">
      ${switcher('Period', periodLinks, charts.period, (period) => overviewUrl(period, charts.mode))}
      ${switcher('Mode', modeLinks, charts.mode, (mode) => overviewUrl(charts.period, mode))}
    </nav>
  </div>
  <p class="muted small">${
    charts.unit === 'hour'
      ? 'Per hour (UTC) over the last 24 hours, the current hour last.'
      : 'Per day (UTC) over the last 30 days, today last: per day rather than per hour, since 720 hourly bars would be too thin to read.'
  } ${charts.mode === 'test' ? 'Test mode: calls placed with test keys, simulated.' : 'Live mode: calls placed with live keys.'}</p>
  <div class="charts">
    <section class="chart-card" aria-labelledby="chart-calls-heading">
      <h3 id="chart-calls-heading">Calls by outcome</h3>
      ${stackedBarChart(
        {
          ...common,
          id: 'chart-calls',
          wide: true,
          title: `Calls per ${perSlot} by outcome, ${when}`,
          summary: `Calls per ${perSlot} by outcome over ${when}, ${charts.mode} mode: ${inWords(charts.calls)}.`,
          yTitle: `Calls per ${perSlot}`,
          emptyText: `No calls in ${when}.`,
          tableCaption: `Calls per ${perSlot} by outcome`,
        },
        charts.slots,
        charts.calls,
      )}
    </section>
    <section class="chart-card" aria-labelledby="chart-deliveries-heading">
      <h3 id="chart-deliveries-heading">Webhook deliveries</h3>
      ${stackedBarChart(
        {
          ...common,
          id: 'chart-deliveries',
          title: `Webhook deliveries per ${perSlot}, ${when}`,
          summary: `Webhook deliveries of ${charts.mode} events per ${perSlot} over ${when}: ${inWords(charts.deliveries)}.${waiting}`,
          yTitle: `Deliveries per ${perSlot}`,
          emptyText: `No webhook deliveries in ${when}.`,
          tableCaption: `Webhook deliveries per ${perSlot}`,
        },
        charts.slots,
        charts.deliveries,
      )}
      <p class="muted small">By when the delivery was made. Retried: it needed more than one attempt (delivered since, or still being retried); failed: every attempt failed.${waiting}</p>
    </section>
    <section class="chart-card" aria-labelledby="chart-latency-heading">
      <h3 id="chart-latency-heading">Latency of <code>POST /v1/calls</code></h3>
      ${lineChart(
        {
          ...common,
          id: 'chart-latency',
          title: `p50 and p99 latency of POST /v1/calls per ${perSlot}, ${when}`,
          summary:
            requests === 0
              ? `No POST /v1/calls requests in ${when}, ${charts.mode} mode.`
              : `p50 and p99 latency of POST /v1/calls per ${perSlot} over ${when}, ${charts.mode} mode: ${formatNumber(requests)} request${requests === 1 ? '' : 's'}, p50 ${ms(p50 ?? 0)}, p99 ${ms(p99 ?? 0)} over the period.`,
          yTitle: 'Milliseconds',
          emptyText: `No POST /v1/calls requests in ${when}.`,
          tableCaption: `Latency of POST /v1/calls per ${perSlot}, in milliseconds`,
        },
        charts.slots,
        charts.latency,
        { totals: [p50 === null ? '' : ms(p50), p99 === null ? '' : ms(p99)], format: ms },
      )}
      <p class="muted small">Time from the request's arrival to its answer, every answer counted (errors too). Measured into buckets each ${String(charts.bucketGrowthPercent)} % wider than the one before; a percentile is shown as the top of its bucket, so it is at most ${String(charts.bucketGrowthPercent)} % above the measured value.</p>
    </section>
  </div>
</section>`;
}
