/**
 * The overview: a quick start with this installation's base URL, an agent of the account and a curl command,
 * the state of its webhook endpoints (each one in trouble since when, linked to its page), then charts of
 * the account's calls, webhook deliveries and latency.
 */
import type { CallWithMode } from '../../features/calls/calls.service.js';
import type { AgentView } from '../../features/agents/agents.service.js';
import { createCallCurl } from '../../features/calls/curl-example.js';
import type { EndpointTrouble } from '../../features/webhook-delivery/endpoint-health.service.js';
import type { EndpointView } from '../../features/webhook-endpoints/endpoints.service.js';
import { badge, copyable, copyButton, portalPath, time } from './components.js';
import { html } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';
import { callsTable } from './calls.view.js';
import type { OverviewCharts } from '../portal-charts.service.js';
import { overviewCharts } from './overview-charts.view.js';

export interface OverviewInput {
  readonly user: NonNullable<PageFrame['user']>;
  readonly baseUrl: string;
  readonly agents: readonly AgentView[];
  readonly activeKeys: number;
  readonly endpoints: readonly EndpointView[];
  /** The account's endpoints that fail, or that their failures disabled, in id order. */
  readonly troubledEndpoints: readonly { readonly endpoint: EndpointView; readonly trouble: EndpointTrouble }[];
  readonly recentCalls: readonly CallWithMode[];
  /** The account's max_concurrent_calls (null: none) and its calls in progress now, in each mode. */
  readonly concurrency: { readonly limit: number | null; readonly live: number; readonly test: number };
  readonly charts: OverviewCharts;
}

function step(number: number, title: string, done: boolean, body: unknown) {
  return html`<li class="step${done ? ' step-done' : ''}">
  <span class="step-number" aria-hidden="true">${done ? '✓' : String(number)}</span>
  <div class="step-body"><h3>${title}${done ? html` <span class="visually-hidden">(done)</span>` : ''}</h3>${body}</div>
</li>`;
}

/** "2 of 5" live calls in progress (test calls count apart, against the same limit), or "no limit". */
function concurrentCalls({ limit, live, test }: OverviewInput['concurrency']) {
  if (limit === null) return html`no limit <span class="muted small">(${String(live)} live, ${String(test)} test in progress)</span>`;
  return html`${String(live)} of ${String(limit)} <span class="muted small">live calls in progress; test calls: ${String(test)} of ${String(limit)}</span>`;
}

/** The endpoints in trouble the overview names; a count and a link to all stand for the others. */
const troublesShown = 3;

/** An endpoint in trouble: since when it fails, or was disabled, with a link to its own page. */
function troubleLine({ endpoint, trouble }: OverviewInput['troubledEndpoints'][number]) {
  const link = html`<a href="${portalPath('webhooks', endpoint.id)}" class="break">${endpoint.description || endpoint.url}</a>`;
  if (trouble.state === 'disabled') {
    return html`<div>${badge('disabled')} since ${time(trouble.disabled_at)}: ${link} <span class="muted small">Nothing is sent to it until it is enabled again.</span></div>`;
  }
  const waiting = trouble.backoff ? html` <span class="muted small">It does not answer: its events wait for it.</span>` : '';
  return html`<div>${badge('failing', 'bad')} since ${time(trouble.failing_since)}: ${link}${waiting}</div>`;
}

/** Enabled; or each endpoint that fails, or that its failures disabled, since when, with a link; or none. */
function webhooksState(enabled: number, troubled: OverviewInput['troubledEndpoints']) {
  if (troubled.length === 0) return enabled === 0 ? html`<span class="muted">no endpoint</span>` : badge('enabled');
  // Disabled ones first: nothing reaches them at all.
  const ordered = [...troubled].sort((a, b) => Number(b.trouble.state === 'disabled') - Number(a.trouble.state === 'disabled'));
  const hidden = ordered.length - troublesShown;
  const healthy = enabled - troubled.filter(({ trouble }) => trouble.state === 'failing').length;
  return html`${ordered.slice(0, troublesShown).map(troubleLine)}${
    hidden > 0 ? html`<div class="muted small">and ${String(hidden)} more: <a href="/developers/webhooks">all endpoints</a></div>` : ''
  }${healthy > 0 ? html`<div class="muted small">${String(healthy)} other endpoint${healthy === 1 ? '' : 's'} enabled</div>` : ''}`;
}

/** The account's ids, base URL, agent, limits and webhooks: what an integration is configured with. */
function integrationCard(input: OverviewInput, agent: AgentView | undefined, enabledEndpoints: number, factsClass: string) {
  return html`<section class="card" aria-labelledby="details">
  <h2 id="details">Your integration</h2>
  <dl class="${factsClass}">
    <dt>Account id</dt><dd>${copyable('account-id', input.user.accountId)} <span class="muted small">${input.user.accountName}</span></dd>
    <dt>Base URL</dt><dd>${copyable('base-url', input.baseUrl)}</dd>
    <dt>Agent id</dt><dd>${agent ? html`${copyable('agent-id', agent.agent_id)} <span class="muted small">${agent.name}</span>` : html`<span class="muted">none yet</span>`}</dd>
    <dt>Endpoint</dt><dd><code>POST /v1/calls</code></dd>
    <dt>Auth</dt><dd><code>Authorization: Bearer &lt;token&gt;</code></dd>
    <dt>Concurrent calls</dt><dd id="concurrent-calls">${concurrentCalls(input.concurrency)}</dd>
    <dt>Webhooks</dt><dd id="webhooks-state">${webhooksState(enabledEndpoints, input.troubledEndpoints)}</dd>
  </dl>
</section>`;
}

export function overviewPage(input: OverviewInput): string {
  const agent = input.agents[0];
  const agentId = agent?.agent_id ?? 'agent_…';
  const enabledEndpoints = input.endpoints.filter((endpoint) => endpoint.enabled).length;
  // Once every step is done the page is the account's overview; the steps stay, folded, for the curl command.
  const allDone = input.activeKeys > 0 && input.recentCalls.length > 0 && enabledEndpoints > 0;
  const steps = html`<ol class="steps">
    ${step(
      1,
      'Create an API key',
      input.activeKeys > 0,
      html`<p>${
        input.activeKeys > 0
          ? html`You have ${input.activeKeys} active key${input.activeKeys === 1 ? '' : 's'}. `
          : 'Test keys place simulated calls only; live keys place real ones. '
      }<a href="/developers/api-keys">${input.activeKeys > 0 ? 'Manage keys' : 'Create a key'}</a></p>`,
    )}
    ${step(
      2,
      'Start a call',
      input.recentCalls.length > 0,
      html`<p>Paste this in a terminal, with your token in place of <code>cg_test_…</code>.</p>
      <div class="code-block"><div class="code-head"><span>Terminal</span>${copyButton('curl')}</div><pre id="curl" tabindex="0">${createCallCurl(input.baseUrl, agentId)}</pre></div>
      ${agent ? '' : html`<p class="muted small">Your account has no agent yet: ask your callgate operator to add one.</p>`}`,
    )}
    ${step(
      3,
      'Receive the outcome',
      enabledEndpoints > 0,
      html`<p>Each call ends with a signed <code>call.completed</code> or <code>call.failed</code> event. ${
        enabledEndpoints > 0
          ? html`${enabledEndpoints} endpoint${enabledEndpoints === 1 ? '' : 's'} enabled. <a href="/developers/webhooks">See deliveries</a>`
          : html`<a href="/developers/webhooks/new">Add a webhook endpoint</a>`
      }</p>`,
    )}
  </ol>`;
  const integration = (factsClass: string) => integrationCard(input, agent, enabledEndpoints, factsClass);
  return layout(
    { title: 'Overview', user: input.user, active: 'overview' },
    html`<div class="page-head">
  ${
    allDone
      ? html`<h1>Overview</h1>
  <p class="lead">Your account's calls, webhooks and API at a glance.</p>`
      : html`<h1>Get your first call working</h1>
  <p class="lead">Three steps: a key, one request, and a webhook for the outcome.</p>`
  }
</div>
${
  allDone
    ? // Every step done: the account across the page, the folded steps on one line under it (beside it, the
      // folded card left an empty column as tall as the account's facts).
      html`${integration('facts facts-wide')}
<details class="card quick-start">
  <summary><h2 id="qs">Quick start</h2> <span class="muted small">all three steps done: a key, a call, a webhook endpoint</span></summary>
  ${steps}
</details>`
    : html`<div class="grid-2">
<section class="card" aria-labelledby="qs">
  <h2 id="qs">Quick start</h2>
  ${steps}
</section>
${integration('facts')}
</div>`
}
${overviewCharts(input.charts)}
<section class="card" aria-labelledby="recent">
  <div class="card-head"><h2 id="recent">Recent calls</h2><a href="/developers/calls">All calls</a></div>
  ${callsTable(input.recentCalls, 'No calls yet. Run the curl command above to place your first one.')}
</section>
${input.recentCalls.length > 0 ? html`<p class="muted small">Last call ${time(input.recentCalls[0]?.created_at)}.</p>` : ''}`,
  );
}
