/** Webhook endpoints: the list, the add/edit form, and an endpoint's page with its secret and deliveries. */
import { describeBackoff, type DeliveryWithAttempts, type EndpointBackoff } from '../../features/webhook-delivery/deliveries.service.js';
import { toEndpointView, type EndpointView } from '../../features/webhook-endpoints/endpoints.service.js';
import { webhookEventTypes } from '../../features/events/event-types.js';
import { webhookUrlRule } from '../../features/webhook-endpoints/ssrf-guard.js';
import type { WebhookEndpointRow } from '../../features/webhook-endpoints/endpoints.tables.js';
import { endpointDeliveriesShown } from '../portal.service.js';
import { badge, copyButton, csrfField, portalPath, table, time } from './components.js';
import { deliveryList } from './deliveries.view.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

type User = NonNullable<PageFrame['user']>;

/** Enabled, disabled, or failing: an enabled endpoint that stopped answering, whose deliveries wait for a probe. */
function endpointStatus(endpoint: EndpointView, backoff: EndpointBackoff | null | undefined): SafeHtml {
  if (!endpoint.enabled) return badge('disabled');
  if (!backoff) return badge('enabled');
  return html`${badge('failing', 'bad')} <span class="muted small">${describeBackoff(backoff)}</span>`;
}

export function webhooksPage(
  user: User,
  endpoints: readonly EndpointView[],
  notice: string | undefined,
  backoffs: ReadonlyMap<string, EndpointBackoff> = new Map(),
  keyNames: ReadonlyMap<string, string> = new Map(),
): string {
  const rows = endpoints.map((endpoint) => [
    html`<a href="${portalPath('webhooks', endpoint.id)}" class="break">${endpoint.url}</a>${endpoint.description ? html`<div class="muted small">${endpoint.description}</div>` : ''}${endpoint.created_by_key_id ? html`<div class="muted small">Made over the API by the key ${keyNames.get(endpoint.created_by_key_id) ?? html`<code>${endpoint.created_by_key_id}</code>`}</div>` : ''}`,
    badge(endpoint.mode),
    endpoint.event_types.map((type) => html`<code class="tag">${type}</code> `),
    endpointStatus(endpoint, backoffs.get(endpoint.id)),
    time(endpoint.created_at),
  ]);
  return layout(
    { title: 'Webhooks', user, active: 'webhooks', notice },
    html`<div class="page-head page-head-actions">
  <div><h1>Webhooks</h1><p class="lead">Endpoints that receive signed events: ${webhookEventTypes.map((type, index) => html`${index === 0 ? '' : index === webhookEventTypes.length - 1 ? ' and ' : ', '}<code>${type}</code>`)}, as each endpoint chooses.</p></div>
  <a class="button button-primary" href="/developers/webhooks/new">Add endpoint</a>
</div>
<section class="card">
  ${table('Webhook endpoints', [{ label: 'URL' }, { label: 'Mode' }, { label: 'Events' }, { label: 'Status' }, { label: 'Created' }], rows, html`No endpoints yet. <a href="/developers/webhooks/new">Add one</a> to learn how your calls end.`)}
</section>`,
  );
}

export interface EndpointFormValues {
  readonly url: string;
  readonly description: string;
  readonly eventTypes: readonly string[];
  readonly enabled: boolean;
  /** Chosen on the new-endpoint form only: an endpoint keeps the mode it was made in. */
  readonly mode: 'test' | 'live';
}

export function endpointFormPage(
  user: User,
  input: { endpoint?: WebhookEndpointRow; values: EndpointFormValues; error?: string; allowPrivate: boolean },
): string {
  const { endpoint, values } = input;
  const action = endpoint ? portalPath('webhooks', endpoint.id) : '/developers/webhooks';
  const title = endpoint ? 'Edit endpoint' : 'Add an endpoint';
  return layout(
    { title, user, active: 'webhooks', error: input.error },
    html`<p class="crumbs"><a href="/developers/webhooks">Webhooks</a> /${endpoint ? html` <a href="${portalPath('webhooks', endpoint.id)}">${endpoint.url}</a> /` : ''}</p>
<section class="card narrow">
  <h1>${title}</h1>
  <form method="post" action="${action}" class="stack">
    ${csrfField(user.csrfToken)}
    <div class="field">
      <label for="url">Endpoint URL</label>
      <input id="url" name="url" type="url" required maxlength="2000" value="${values.url}" placeholder="https://example.com/webhooks/callgate" aria-describedby="url-hint" spellcheck="false">
      <p class="hint" id="url-hint">Where events are POSTed. ${webhookUrlRule(input.allowPrivate)}</p>
    </div>
    <div class="field">
      <label for="description">Description <span class="muted">(optional)</span></label>
      <input id="description" name="description" type="text" maxlength="500" value="${values.description}" placeholder="CRM production">
    </div>
    ${
      endpoint
        ? html`<p class="hint">Mode: ${badge(endpoint.mode)} (an endpoint keeps the mode it was made in)</p>`
        : html`<fieldset class="field">
      <legend>Mode</legend>
      <label class="choice"><input type="radio" name="mode" value="test"${values.mode === 'test' ? html` checked` : ''}> Test: the events of test-mode keys' simulated calls and batches</label>
      <label class="choice"><input type="radio" name="mode" value="live"${values.mode === 'live' ? html` checked` : ''}> Live: the events of real calls and batches</label>
    </fieldset>`
    }
    <fieldset class="field">
      <legend>Events to send</legend>
      ${webhookEventTypes.map(
        (type) =>
          html`<label class="choice"><input type="checkbox" name="event_types" value="${type}"${values.eventTypes.includes(type) ? html` checked` : ''}> <code>${type}</code></label>`,
      )}
    </fieldset>
    <div class="field">
      <label class="choice"><input type="checkbox" name="enabled" value="on"${values.enabled ? html` checked` : ''}> Enabled</label>
    </div>
    <div class="actions">
      <button type="submit" class="button button-primary">${endpoint ? 'Save endpoint' : 'Add endpoint'}</button>
      <a class="button button-quiet" href="${endpoint ? portalPath('webhooks', endpoint.id) : '/developers/webhooks'}">Cancel</a>
    </div>
  </form>
</section>
${
  endpoint
    ? html`<section class="card narrow card-danger" aria-labelledby="delete">
  <h2 id="delete">Delete this endpoint</h2>
  <details>
    <summary class="button button-danger-quiet">Delete…</summary>
    <p>Deleting stops all deliveries to this endpoint at once; pending ones end as failed. Its delivery history is kept.</p>
    <form method="post" action="${portalPath('webhooks', endpoint.id, 'delete')}" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button button-danger">Delete endpoint</button></form>
  </details>
</section>`
    : ''
}`,
  );
}

export interface EndpointPageInput {
  readonly user: User;
  readonly endpoint: WebhookEndpointRow;
  readonly deliveries: readonly DeliveryWithAttempts[];
  /** Its deliveries' wait for a probe, when it stopped answering. */
  readonly backoff?: EndpointBackoff | null;
  /** The signing secret, only when the user asked to reveal it (or has just rotated it). */
  readonly secret?: string;
  /** The name of the key that made it over the API, when one did. */
  readonly madeBy?: string | null;
  readonly notice?: string | undefined;
  readonly error?: string | undefined;
}

function secretSection(user: User, endpoint: WebhookEndpointRow, secret: string | undefined): SafeHtml {
  const revealForm = html`<form method="post" action="${portalPath('webhooks', endpoint.id, 'secret')}" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button">Reveal secret</button></form>`;
  return html`<section class="card" aria-labelledby="secret">
  <h2 id="secret">Signing secret</h2>
  <p>Deliveries are signed per Standard Webhooks (<code>webhook-id</code>, <code>webhook-timestamp</code>, <code>webhook-signature</code>). Verify them with this secret.</p>
  ${secret ? html`<div class="secret-box"><code id="endpoint-secret" class="token">${secret}</code>${copyButton('endpoint-secret', 'Copy secret')}</div>` : html`<p class="secret-hidden"><code>whsec_••••••••••••••••</code> ${revealForm}</p>`}
  <details class="rotate">
    <summary class="button">Rotate secret…</summary>
    <p>A new secret is made now. For 24 hours each delivery is signed with the old and the new secret, so you can switch your receiver without losing events.</p>
    <form method="post" action="${portalPath('webhooks', endpoint.id, 'rotate')}" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button">Rotate secret now</button></form>
  </details>
</section>`;
}

export function endpointPage(input: EndpointPageInput): string {
  const { user, endpoint } = input;
  const view = toEndpointView(endpoint);
  const here = portalPath('webhooks', endpoint.id);
  return layout(
    {
      title: 'Webhook endpoint',
      user,
      active: 'webhooks',
      notice: input.notice,
      error: input.error,
      ...(input.secret ? { replaceUrl: here } : {}),
    },
    html`<p class="crumbs"><a href="/developers/webhooks">Webhooks</a> /</p>
<div class="page-head page-head-actions">
  <div><h1 class="break">${endpoint.url}</h1>${endpoint.description ? html`<p class="lead">${endpoint.description}</p>` : ''}</div>
  <div class="actions">
    <form method="post" action="${portalPath('webhooks', endpoint.id, 'test')}" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button button-primary"${view.enabled ? '' : html` disabled`}>Send test event</button></form>
    <a class="button" href="${portalPath('webhooks', endpoint.id, 'edit')}">Edit</a>
  </div>
</div>
<div class="grid-2">
<section class="card" aria-labelledby="settings">
  <h2 id="settings">Settings</h2>
  <dl class="facts">
    <dt>Status</dt><dd>${endpointStatus(view, input.backoff)}${view.disabled_reason ? html` <span class="muted small">${view.disabled_reason}</span>` : ''}</dd>
    <dt>Mode</dt><dd>${badge(endpoint.mode)} <span class="muted small">${endpoint.mode === 'test' ? "receives the events of test-mode keys' calls and batches only" : 'receives the events of live calls and batches only'}</span></dd>
    <dt>Events</dt><dd>${view.event_types.map((type) => html`<code class="tag">${type}</code> `)}</dd>
    <dt>Endpoint id</dt><dd><code>${endpoint.id}</code></dd>${endpoint.created_by_key_id ? html`<dt>Made</dt><dd>over the API by the key ${input.madeBy ?? ''} <code>${endpoint.created_by_key_id}</code></dd>` : ''}
    <dt>Created</dt><dd>${time(endpoint.created_at)}</dd>
    ${endpoint.failing_since ? html`<dt>Failing since</dt><dd class="text-bad">${time(endpoint.failing_since)}</dd>` : ''}
  </dl>
</section>
${secretSection(user, endpoint, input.secret)}
</div>
<section class="card" aria-labelledby="deliveries">
  <div class="card-head"><h2 id="deliveries">Recent deliveries</h2><a href="${here}">Refresh</a></div>
  ${deliveryList(input.deliveries, { showEndpoint: false, csrfToken: user.csrfToken, back: here })}
  ${
    input.deliveries.length >= endpointDeliveriesShown
      ? html`<p class="muted small">The ${String(endpointDeliveriesShown)} most recent deliveries. An older one is on the page of its call (Calls), with every attempt; <code>callgate deliveries list</code> lists them all.</p>`
      : ''
  }
</section>`,
  );
}
