import type { AgentView } from '../../features/agents/agents.service.js';
import type { Call } from '../../features/calls/calls.schemas.js';
import type { CallWithMode } from '../../features/calls/calls.service.js';
import type { DialHistory } from '../../features/calls/dials.service.js';
import type { CallRow } from '../../features/calls/calls.tables.js';
import type { DeliveryWithAttempts } from '../../features/webhook-delivery/deliveries.service.js';
import type { WebhookEventRow } from '../../features/events/events.tables.js';
import { callContentSection, type CallContentView } from './call-content.view.js';
import { badge, copyable, csrfField, portalPath, pretty, table, time } from './components.js';
import { deliveryList } from './deliveries.view.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

export const callStatuses: readonly CallRow['status'][] = ['initiated', 'completed', 'failed'];

export function callsTable(calls: readonly CallWithMode[], empty: string): SafeHtml {
  const rows = calls.map((call) => [
    time(call.created_at),
    html`<a href="${portalPath('calls', call.id)}"><code>${call.id}</code></a>`,
    html`<code>${call.agent_id}</code>`,
    call.to,
    badge(call.status),
    badge(call.mode),
    call.duration_seconds === undefined ? html`<span class="muted">—</span>` : `${call.duration_seconds} s`,
  ]);
  const columns = [
    { label: 'Created' },
    { label: 'Call' },
    { label: 'Agent' },
    { label: 'To' },
    { label: 'Status' },
    { label: 'Mode' },
    { label: 'Duration', numeric: true },
  ];
  return table('Calls', columns, rows, empty);
}

export interface CallsPageInput {
  readonly user: NonNullable<PageFrame['user']>;
  readonly calls: readonly CallWithMode[];
  readonly agents: readonly AgentView[];
  readonly status: string | undefined;
  readonly agentId: string | undefined;
  readonly paged: boolean;
  readonly olderUrl: string | undefined;
  readonly newestUrl: string;
}

export function callsPage(input: CallsPageInput): string {
  return layout(
    { title: 'Calls', user: input.user, active: 'calls' },
    html`<div class="page-head"><h1>Calls</h1><p class="lead">Every call of your account, newest first.</p></div>
<section class="card">
  <form method="get" action="/developers/calls" class="toolbar">
    <div class="field">
      <label for="status">Status</label>
      <select id="status" name="status">
        <option value="">Any status</option>
        ${callStatuses.map((status) => html`<option value="${status}"${status === input.status ? html` selected` : ''}>${status}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="agent_id">Agent</label>
      <select id="agent_id" name="agent_id">
        <option value="">Any agent</option>
        ${input.agents.map((agent) => html`<option value="${agent.agent_id}"${agent.agent_id === input.agentId ? html` selected` : ''}>${agent.name} (${agent.agent_id})</option>`)}
      </select>
    </div>
    <button type="submit" class="button">Filter</button>
    ${input.status || input.agentId ? html`<a class="button button-quiet" href="/developers/calls">Clear</a>` : ''}
  </form>
  ${callsTable(input.calls, input.status || input.agentId ? 'No calls match these filters.' : 'No calls yet.')}
  <nav class="pager" aria-label="Pages of calls">
    ${input.paged ? html`<a href="${input.newestUrl}">← Newest</a>` : html`<span></span>`}
    ${input.olderUrl ? html`<a href="${input.olderUrl}">Older calls →</a>` : ''}
  </nav>
</section>`,
  );
}

export interface CallPageInput {
  readonly user: NonNullable<PageFrame['user']>;
  readonly call: CallWithMode;
  /** The voice provider that placed the call (the simulator for every test-mode call, and for a live one on a simulator agent). */
  readonly provider: CallRow['provider'];
  /** The dial that placed the call, when it was recorded (calls made before dials were kept have none). */
  readonly dial: DialHistory | undefined;
  readonly events: readonly { event: WebhookEventRow; deliveries: DeliveryWithAttempts[] }[];
  /** The transcript and whether there is a recording, once the call has ended (null before). */
  readonly content: CallContentView | null;
  readonly notice?: string | undefined;
  /** Why a cancel was refused (its page again, 409 or 503). */
  readonly error?: string | undefined;
}

/** The dial's steps: what callgate asked the provider, what came back, and how a lost answer was resolved. */
function dialSection(call: CallWithMode, dial: DialHistory | undefined): SafeHtml {
  if (!dial) return html``;
  const lost = call.found_after_lost_answer === true;
  return html`<section class="card" aria-labelledby="dial">
  <h2 id="dial">Dial</h2>
  <p>${
    lost
      ? html`The provider's answer to this call's create request was lost; callgate found the call at the provider afterwards (dial <code>${dial.id}</code>).`
      : html`Placed by dial <code>${dial.id}</code>.`
  }</p>
  <ol class="timeline">${dial.steps.map((step) => html`<li><span class="muted small">${time(step.at)}</span> ${step.step}</li>`)}</ol>
</section>`;
}

function outcome(call: Call): SafeHtml {
  if (call.status === 'completed') {
    return html`<dl class="facts">
  <dt>Duration</dt><dd>${call.duration_seconds ?? 0} s</dd>
  <dt>Started</dt><dd>${time(call.started_at)}</dd>
  <dt>Ended</dt><dd>${time(call.ended_at)}</dd>
  <dt>Summary</dt><dd>${call.transcript_summary || html`<span class="muted">—</span>`}</dd>
</dl>`;
  }
  if (call.status === 'failed') {
    return html`<dl class="facts">
  <dt>Reason</dt><dd><code>${call.failure_reason ?? 'unknown'}</code></dd>
  <dt>Message</dt><dd>${call.failure_message ?? html`<span class="muted">—</span>`}</dd>
  <dt>Failed</dt><dd>${time(call.failed_at)}</dd>
</dl>`;
  }
  if (call.cancel_requested_at) {
    return html`<p>Cancelled at ${time(call.cancel_requested_at)}: the voice provider is ending the call. Its outcome arrives as a <code>call.completed</code> (it was answered) or <code>call.failed</code> with reason <code>cancelled</code> event.</p>`;
  }
  return html`<p>The call is under way. Its outcome arrives as a <code>call.completed</code> or <code>call.failed</code> event.</p>`;
}

/** Asks before a call is ended: it cannot be undone, and the person may be speaking with the agent. */
export function cancelCallPage(user: NonNullable<PageFrame['user']>, call: CallWithMode): string {
  return layout(
    { title: 'Cancel call', user, active: 'calls' },
    html`<p class="crumbs"><a href="/developers/calls">Calls</a> / <a href="${portalPath('calls', call.id)}">${call.id}</a> /</p>
<section class="card narrow card-danger" aria-labelledby="cancel">
  <h1 id="cancel">Cancel the call to ${call.to}?</h1>
  <p>Call <code>${call.id}</code> (${call.mode}), agent <code>${call.agent_id}</code>, created ${time(call.created_at)}.</p>
  <p><strong>Its voice provider ends the call now:</strong> if it is still ringing it is cancelled (<code>call.failed</code>, reason <code>cancelled</code>); if someone answered, the agent hangs up (<code>call.completed</code>). This cannot be undone.</p>
  <form method="post" action="${portalPath('calls', call.id, 'cancel')}" class="actions">
    ${csrfField(user.csrfToken)}
    <button type="submit" class="button button-danger">Cancel the call now</button>
    <a class="button button-quiet" href="${portalPath('calls', call.id)}">Keep it</a>
  </form>
</section>`,
  );
}

/** A live-mode call that the simulator placed: its agent's provider is the simulator; nobody was phoned. */
function simulatedLive(mode: CallWithMode['mode'], provider: CallRow['provider']): boolean {
  return mode === 'live' && provider === 'simulator';
}

/** The call's mode said plainly: which key placed it, and whether anyone was phoned. */
function modeLine(mode: CallWithMode['mode'], provider: CallRow['provider']): SafeHtml {
  if (mode === 'test') return html`test (a test-mode key: simulated)`;
  if (simulatedLive(mode, provider)) {
    return html`live: simulated (the agent's provider is the simulator), counted as live<br><span class="muted small">A live key placed it: it is a live call (<code>"livemode": true</code>, sent to live endpoints, in the live charts and among the live calls of the concurrency limit), yet nobody was phoned.</span>`;
  }
  return html`live (a live key: a real call through <code>${provider}</code>)`;
}

export function callPage(input: CallPageInput): string {
  const { call, user } = input;
  const back = portalPath('calls', call.id);
  const events = input.events.map(
    ({ event, deliveries }) => html`<article class="event">
  <h3><code>${event.type}</code> <span class="muted small">${event.id} · ${time(event.created_at)}</span></h3>
  <details class="payload"><summary>Payload</summary><pre>${pretty(JSON.parse(event.payload))}</pre></details>
  ${deliveries.length === 0 ? html`<p class="empty">No endpoint was subscribed when this event was written.</p>` : deliveryList(deliveries, { showEndpoint: true, csrfToken: user.csrfToken, back })}
</article>`,
  );
  const cancellable = call.status === 'initiated' && !call.cancel_requested_at;
  return layout(
    { title: `Call ${call.id}`, user, active: 'calls', notice: input.notice, error: input.error },
    html`<p class="crumbs"><a href="/developers/calls">Calls</a> /</p>
<div class="page-head page-head-actions">
  <div><h1 class="break">${copyable('call-id', call.id)}</h1><p>${badge(call.status)} ${badge(call.mode)}${simulatedLive(call.mode, input.provider) ? html` ${badge('simulated')}` : ''}</p></div>
  ${cancellable ? html`<div class="actions"><a class="button button-danger-quiet" href="${portalPath('calls', call.id, 'cancel')}">Cancel call…</a></div>` : ''}
</div>
<div class="grid-2">
<section class="card" aria-labelledby="req">
  <h2 id="req">Request</h2>
  <dl class="facts">
    <dt>Agent</dt><dd><code>${call.agent_id}</code></dd>
    <dt>Mode</dt><dd id="call-mode">${modeLine(call.mode, input.provider)}</dd>
    <dt>To</dt><dd>${call.to}</dd>
    <dt>Created</dt><dd>${time(call.created_at)}</dd>
    <dt>Metadata</dt><dd>${call.metadata ? html`<pre class="json">${pretty(call.metadata)}</pre>` : html`<span class="muted">none</span>`}</dd>
  </dl>
</section>
<section class="card" aria-labelledby="out">
  <h2 id="out">Outcome</h2>
  ${outcome(call)}
</section>
</div>
${callContentSection(call, input.content)}
${dialSection(call, input.dial)}
<section class="card" aria-labelledby="ev">
  <h2 id="ev">Events and deliveries</h2>
  ${events.length === 0 ? html`<p class="empty">No event yet: one is written when the call ends.</p>` : events}
</section>`,
  );
}
