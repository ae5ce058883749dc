import type { RequestLogRow } from '../../request-log/request-log.tables.js';
import { statusCode, table, time } from './components.js';
import { html } from './html.js';
import { layout, type PageFrame } from './layout.view.js';

export function requestsPage(
  user: NonNullable<PageFrame['user']>,
  rows: readonly RequestLogRow[],
  search: string | undefined,
  pages: { readonly paged: boolean; readonly olderUrl: string | undefined } = { paged: false, olderUrl: undefined },
): string {
  const lines = rows.map((row) => [
    time(row.created_at),
    html`<code>${row.key_prefix}…</code>`,
    html`<code>${row.method} ${row.path}</code>`,
    statusCode(row.status),
    row.error_code ? html`<code>${row.error_code}</code>` : html`<span class="muted">—</span>`,
    html`<a href="/developers/requests?request_id=${encodeURIComponent(row.id)}"><code>${row.id}</code></a>`,
    `${row.duration_ms} ms`,
  ]);
  const columns = [
    { label: 'Time' },
    { label: 'Key' },
    { label: 'Request' },
    { label: 'Status' },
    { label: 'Error' },
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
