import { wasCut } from '../../features/request-log/request-log-bodies.js';
import type { RequestLogRow, RequestLogSummary } from '../../features/request-log/request-log.tables.js';
import { badge, copyable, portalPath, pretty, statusCode, table, time, wrapKeepingIds } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

/** A replay: the stored answer of an earlier request with the same Idempotency-Key (nothing done again). */
const replayedBadge = html`<span title="The stored answer of an earlier request with the same Idempotency-Key: nothing was done again">${badge('replayed', 'info')}</span>`;

export function requestsPage(
  user: NonNullable<PageFrame['user']>,
  rows: readonly RequestLogSummary[],
  search: string | undefined,
  pages: { readonly paged: boolean; readonly olderUrl: string | undefined } = { paged: false, olderUrl: undefined },
): string {
  const lines = rows.map((row) => [
    // The time on one line (the zone in the column's heading: a date and a time broken apart read as two
    // values), the key under it: a column of its own left the path too little room.
    html`${time(row.created_at, { zone: false })}<span class="request-key"><code class="id">${row.key_prefix}…</code></span>`,
    // A long path (a query with every filter) wraps after a / ? or &, never inside an id or a segment.
    html`<code class="path">${row.method} ${wrapKeepingIds(row.path)}</code>`,
    // The status with its error code under it, the code whole (`invalid_idempotency_key`, never `invalid_` /
    // `idempotency_key`): one column for both leaves the path the room it needs.
    html`<span class="status-line">${statusCode(row.status)}${row.replayed ? html` ${replayedBadge}` : ''}</span>${
      row.error_code ? html`<code class="error-code">${row.error_code}</code>` : ''
    }`,
    html`<a href="${portalPath('requests', row.id)}"><code class="id">${row.id}</code></a>`,
    `${row.duration_ms} ms`,
  ]);
  const columns = [
    { label: 'Time (UTC), key' },
    { label: 'Request' },
    { label: 'Status' },
    { label: 'Request id' },
    { label: 'Duration', numeric: true },
  ];
  const empty = search
    ? html`No request <code>${search}</code> in this account in the last 7 days.`
    : 'No API requests in the last 7 days.';
  return layout(
    { title: 'Request log', user, active: 'requests' },
    html`<div class="page-head">
  <h1>Request log</h1>
  <p class="lead">The API requests of the last 7 days. Every error answer carries a <code>request_id</code>: paste it here to find its story.</p>
</div>
<section class="card">
  <form method="get" action="/developers/requests" class="toolbar" role="search">
    <div class="field grow">
      <label for="request_id">Request id</label>
      <input id="request_id" name="request_id" type="search" placeholder="req_…" value="${search ?? ''}" autocomplete="off" spellcheck="false">
    </div>
    <button type="submit" class="button">Search</button>
    ${search ? html`<a class="button button-quiet" href="/developers/requests">Show all</a>` : ''}
  </form>
  ${table('API requests', columns, lines, empty)}
  ${
    pages.paged || pages.olderUrl
      ? html`<nav class="pager" aria-label="Pages of requests">
    ${pages.paged ? html`<a href="/developers/requests">← Newest</a>` : html`<span></span>`}
    ${pages.olderUrl ? html`<a href="${pages.olderUrl}">Older requests →</a>` : ''}
  </nav>`
      : ''
  }
  <p class="muted small">Requests without a valid API key (401) belong to no account and are not listed. Neither are requests to a path the API does not have.</p>
</section>`,
  );
}

/** A logged body: JSON pretty-printed, anything else (a refused body, a cut one) as it was; escaped either way. */
function bodyBlock(text: string | null, none: string): SafeHtml {
  if (text === null) return html`<p class="empty">${none}</p>`;
  if (wasCut(text)) {
    return html`<pre class="json body">${text}</pre>
  <p class="muted small">Longer than 16 KB: only its beginning is kept.</p>`;
  }
  let shown = text;
  try {
    shown = pretty(JSON.parse(text));
  } catch {
    // Not JSON (a body the API refused as invalid): shown as sent.
  }
  return html`<pre class="json body">${shown}</pre>`;
}

export function requestPage(user: NonNullable<PageFrame['user']>, row: RequestLogRow): string {
  return layout(
    { title: `Request ${row.id}`, user, active: 'requests' },
    html`<p class="crumbs"><a href="/developers/requests">Request log</a> /</p>
<div class="page-head"><h1 class="break">${copyable('request-id', row.id)}</h1><p>${statusCode(row.status)} <code>${row.method} ${row.path}</code></p></div>
<section class="card" aria-labelledby="facts">
  <h2 id="facts">Request</h2>
  <dl class="facts">
    <dt>Time</dt><dd>${time(row.created_at)}</dd>
    <dt>Key</dt><dd><code>${row.key_prefix}…</code></dd>
    <dt>Status</dt><dd>${statusCode(row.status)}${row.error_code ? html` <code>${row.error_code}</code>` : ''}</dd>
    <dt>Idempotency key</dt><dd>${row.idempotency_key ? html`<code class="break">${row.idempotency_key}</code>` : html`<span class="muted">none</span>`}</dd>
    ${row.replayed ? html`<dt>Replayed</dt><dd>${replayedBadge} The stored answer of an earlier request with the same Idempotency-Key, sent again with <code>Idempotent-Replayed: true</code>: nothing was done again.</dd>` : ''}
    <dt>Duration</dt><dd>${row.duration_ms} ms</dd>
  </dl>
</section>
<div class="grid-2 bodies">
<section class="card" aria-labelledby="request-body">
  <h2 id="request-body">Request body</h2>
  ${bodyBlock(row.request_body, 'No body.')}
</section>
<section class="card" aria-labelledby="response-body">
  <h2 id="response-body">Response body</h2>
  ${bodyBlock(row.response_body, 'No body.')}
</section>
</div>
<p class="muted small">Bodies are kept up to 16 KB each, without API tokens, the Authorization header or webhook secrets.</p>`,
  );
}
