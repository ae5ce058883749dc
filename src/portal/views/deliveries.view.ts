/** Deliveries with their attempts: what was sent where, when, and what the receiver answered. */
import type { DeliveryWithAttempts } from '../../features/webhook-delivery/deliveries.service.js';
import { badge, csrfField, portalPath, statusCode, table, time } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';

export interface DeliveryListOptions {
  /** Show the endpoint URL of each delivery (the call page; the endpoint page knows it already). */
  readonly showEndpoint: boolean;
  readonly csrfToken: string;
  /** Where the resend button comes back to. */
  readonly back: string;
}

function attemptsTable(delivery: DeliveryWithAttempts): SafeHtml {
  const rows = delivery.attempts.map((attempt) => [
    String(attempt.attempt_number),
    time(attempt.attempted_at),
    statusCode(attempt.status_code),
    `${attempt.duration_ms} ms`,
    html`${attempt.error ? html`<span class="text-bad">${attempt.error}</span> ` : ''}${
      attempt.response_excerpt
        ? html`<pre class="excerpt">${attempt.response_excerpt}</pre>`
        : attempt.error
          ? ''
          : html`<span class="muted">empty</span>`
    }`,
  ]);
  const columns = [
    { label: '#', numeric: true },
    { label: 'Time' },
    { label: 'Status' },
    { label: 'Duration', numeric: true },
    { label: 'Response' },
  ];
  const pending =
    delivery.status === 'pending'
      ? delivery.next_attempt_at
        ? html`Next attempt ${time(delivery.next_attempt_at)}.`
        : 'Attempt under way.'
      : '';
  return html`${table(`Attempts of ${delivery.id}`, columns, rows, 'No attempt yet.')}
  ${pending ? html`<p class="muted small">${pending}</p>` : ''}`;
}

/** How a delivery's summary names its endpoint: its description when it has one, else its URL. */
function endpointName(delivery: DeliveryWithAttempts): SafeHtml {
  const name = delivery.endpoint_description.trim() || delivery.endpoint_url;
  return html`<span class="delivery-endpoint" title="${delivery.endpoint_url}">→ ${name}${delivery.endpoint_deleted_at ? ' (deleted)' : ''}</span>`;
}

export function deliveryList(deliveries: readonly DeliveryWithAttempts[], options: DeliveryListOptions): SafeHtml {
  if (deliveries.length === 0) return html`<p class="empty">No deliveries yet.</p>`;
  return html`<ul class="deliveries">${deliveries.map(
    (delivery, index) => html`<li>
<details class="delivery"${index === 0 ? html` open` : ''}>
  <summary>
    <span class="delivery-main">${badge(delivery.status)} <code>${delivery.event_type}</code> ${statusCode(delivery.last_status_code)}${options.showEndpoint ? html` ${endpointName(delivery)}` : ''}</span>
    <span class="delivery-meta">${time(delivery.created_at)} · ${delivery.attempt_count} attempt${delivery.attempt_count === 1 ? '' : 's'}${delivery.trigger === 'event' ? '' : html` · ${delivery.trigger}`}</span>
  </summary>
  <div class="delivery-body">
    <dl class="facts compact">
      <dt>Event</dt><dd><code>${delivery.event_id}</code></dd>
      <dt>Delivery</dt><dd><code>${delivery.id}</code></dd>
      ${
        options.showEndpoint
          ? html`<dt>Endpoint</dt><dd>${
              delivery.endpoint_deleted_at
                ? html`<span class="break">${delivery.endpoint_url}</span> <span class="muted small">(deleted)</span>`
                : html`<a href="${portalPath('webhooks', delivery.endpoint_id)}" class="break">${delivery.endpoint_url}</a>`
            }</dd>`
          : ''
      }
      ${delivery.call_id ? html`<dt>Call</dt><dd><a href="${portalPath('calls', delivery.call_id)}"><code>${delivery.call_id}</code></a></dd>` : ''}
      ${delivery.last_error ? html`<dt>Last error</dt><dd class="text-bad">${delivery.last_error}</dd>` : ''}
    </dl>
    ${attemptsTable(delivery)}
    ${
      delivery.endpoint_deleted_at
        ? ''
        : html`<form method="post" action="${portalPath('webhooks', delivery.endpoint_id, 'deliveries', delivery.id, 'resend')}" class="inline">
      ${csrfField(options.csrfToken)}<input type="hidden" name="back" value="${options.back}">
      <button type="submit" class="button button-small">Resend event</button>
    </form>`
    }
  </div>
</details>
</li>`,
  )}</ul>`;
}
