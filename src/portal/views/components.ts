/** Small pieces every portal page uses: times, badges, copy buttons, the CSRF field, tables. */
import { html, type SafeHtml } from '../../lib/html.js';

/**
 * A timestamp as `2026-11-22 07:32:01 UTC`, machine-readable in `datetime`. `wrap`: the date and the time
 * may go on two lines (a table of many columns), never broken inside either. `zone: false`: without ` UTC`
 * (a table column whose heading says UTC), the zone still in the tooltip.
 */
export function time(iso: string | null | undefined, options: { readonly wrap?: boolean; readonly zone?: boolean } = {}): SafeHtml {
  if (!iso) return html`<span class="muted">—</span>`;
  const text = iso.replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
  if (options.zone === false) return html`<time datetime="${iso}" title="${text}">${text.replace(/ UTC$/, '')}</time>`;
  if (!options.wrap) return html`<time datetime="${iso}">${text}</time>`;
  return html`<time class="wrap" datetime="${iso}"><span>${text.slice(0, 10)}</span> <span>${text.slice(11)}</span></time>`;
}

/** Ids such as `batch_01m8…`, `call_conv_01m8…`, `rcp_01m8…`, as they stand in a path or a text. */
const idPattern = /[a-z]+(?:_[a-z]+)*_[0-9a-z]{16,}/g;

/**
 * Text that may wrap anywhere (a long path with every filter) but never inside an id: each id is kept
 * whole in a span of class `id`, and a line may also break after a `/`, `?` or `&`.
 */
export function wrapKeepingIds(text: string): SafeHtml[] {
  const parts: SafeHtml[] = [];
  let at = 0;
  const plain = (from: number, to: number) => {
    for (const piece of text.slice(from, to).split(/(?<=[/?&])/)) if (piece) parts.push(html`${piece}<wbr>`);
  };
  for (const match of text.matchAll(idPattern)) {
    plain(at, match.index);
    parts.push(html`<span class="id">${match[0]}</span>`);
    at = match.index + match[0].length;
  }
  plain(at, text.length);
  return parts;
}

const badgeTones: Record<string, string> = {
  active: 'ok',
  enabled: 'ok',
  completed: 'ok',
  succeeded: 'ok',
  live: 'live',
  test: 'neutral',
  initiated: 'info',
  pending: 'info',
  failed: 'bad',
  revoked: 'bad',
  disabled: 'bad',
};

export function badge(label: string, tone: string = badgeTones[label] ?? 'neutral'): SafeHtml {
  return html`<span class="badge badge-${tone}">${label}</span>`;
}

/** An HTTP status code, green for 2xx, red otherwise; `—` when there was no answer. */
export function statusCode(code: number | null | undefined): SafeHtml {
  if (code === null || code === undefined) return html`<span class="muted">—</span>`;
  return badge(String(code), code >= 200 && code < 300 ? 'ok' : code === 429 || code < 500 ? 'warn' : 'bad');
}

/** A button that copies the text of element `targetId`; hidden until portal.js shows it (it needs JS). */
export function copyButton(targetId: string, label = 'Copy'): SafeHtml {
  return html`<button type="button" class="button button-small copy" data-copy="${targetId}" hidden aria-label="${label} to clipboard">${label}</button>`;
}

/** A value in monospace with a copy button beside it. */
export function copyable(id: string, value: string): SafeHtml {
  return html`<span class="copyable"><code id="${id}">${value}</code>${copyButton(id)}</span>`;
}

export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

export interface Column {
  readonly label: string;
  /** Right-aligned, tabular figures (durations, counts). */
  readonly numeric?: boolean;
}

/**
 * A table of cells. On a wide screen it scrolls sideways rather than squeeze its columns; on a phone each
 * row becomes a small card of label/value lines (the labels come from `data-label`).
 */
export function table(
  caption: string,
  columns: readonly Column[],
  rows: readonly (readonly unknown[])[],
  empty: SafeHtml | string,
): SafeHtml {
  if (rows.length === 0) return html`<p class="empty">${empty}</p>`;
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label="${caption}">
<table class="cards-on-phone">
<caption class="visually-hidden">${caption}</caption>
<thead><tr>${columns.map((column) => html`<th scope="col"${column.numeric ? html` class="num"` : ''}>${column.label}</th>`)}</tr></thead>
<tbody>${rows.map(
    (cells) =>
      html`<tr>${cells.map((cell, index) => {
        const column = columns[index];
        return html`<td data-label="${column?.label ?? ''}"${column?.numeric ? html` class="num"` : ''}><div class="cell">${cell}</div></td>`;
      })}</tr>`,
  )}</tbody>
</table>
</div>`;
}

/** `/developers/...` with each path segment encoded. */
export function portalPath(...segments: string[]): string {
  return ['/developers', ...segments.map((segment) => encodeURIComponent(segment))].join('/');
}

export function pretty(json: unknown): string {
  return JSON.stringify(json, null, 2);
}
