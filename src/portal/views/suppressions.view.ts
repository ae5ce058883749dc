/** The suppression list: numbers the account never calls; add one, import a file of them, remove one. */
import type { CsvProblem } from '../../lib/csv.js';
import type { Suppression } from '../../features/suppressions/suppressions.schemas.js';
import { csrfField, table, time } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

type User = NonNullable<PageFrame['user']>;

/** Faults of an import shown on the page; the rest are counted. */
const problemsShown = 100;

export interface SuppressionsPageInput {
  readonly user: User;
  readonly entries: readonly Suppression[];
  readonly total: number;
  readonly paged: boolean;
  readonly olderUrl: string | undefined;
  readonly notice?: string | undefined;
  /** The add form as sent, with what is wrong with it. */
  readonly add?: { readonly to: string; readonly reason: string; readonly error: string };
  /** The import form as sent, with the faults of its lines (nothing was imported). */
  readonly importForm?: { readonly csv: string; readonly reason: string; readonly problems: readonly CsvProblem[] };
  /** portal.js puts this address in place of the form's (a page answering a POST). */
  readonly replaceUrl?: string;
}

function removeLink(entry: Suppression): SafeHtml {
  const href = `/developers/suppressions/remove?${new URLSearchParams({ to: entry.to })}`;
  return html`<a class="button button-small button-danger-quiet" href="${href}" aria-label="Remove ${entry.to} from the list">Remove…</a>`;
}

function addForm(user: User, add: SuppressionsPageInput['add']): SafeHtml {
  return html`<section class="card" aria-labelledby="add-number">
  <h2 id="add-number">Add a number</h2>
  <form method="post" action="/developers/suppressions" class="stack">
    ${csrfField(user.csrfToken)}
    ${add ? html`<p class="field-error" role="alert">${add.error}</p>` : ''}
    <div class="field">
      <label for="suppress-to">Phone number</label>
      <input id="suppress-to" name="to" type="text" required maxlength="40" value="${add?.to ?? ''}" placeholder="+14155550123" aria-describedby="suppress-to-hint" inputmode="tel" autocomplete="off" spellcheck="false">
      <p class="hint" id="suppress-to-hint">In E.164 format: a + and the country code. Spaces, dashes and brackets are ignored.</p>
    </div>
    <div class="field">
      <label for="suppress-reason">Reason <span class="muted">(optional)</span></label>
      <input id="suppress-reason" name="reason" type="text" maxlength="500" value="${add?.reason ?? ''}" placeholder="Asked not to be called (ticket 881)">
    </div>
    <div><button type="submit" class="button button-primary">Add to the list</button></div>
  </form>
</section>`;
}

function problemList(problems: readonly CsvProblem[]): SafeHtml {
  const shown = problems.slice(0, problemsShown);
  return html`<ul class="problems" id="import-problems">${shown.map(
    (problem) => html`<li>${problem.line > 0 ? html`<strong>Line ${problem.line}</strong> ${problem.message}` : problem.message}</li>`,
  )}${problems.length > shown.length ? html`<li>… and ${problems.length - shown.length} more.</li>` : ''}</ul>`;
}

function importForm(user: User, form: SuppressionsPageInput['importForm']): SafeHtml {
  const problems = form?.problems ?? [];
  return html`<section class="card" aria-labelledby="import-numbers">
  <h2 id="import-numbers">Import numbers</h2>
  <p class="muted small">A CSV file with a <code>to</code> or <code>phone</code> column (and an optional <code>reason</code> column), or one number per line. If any line is wrong, nothing is imported: fix the lines shown and import the file again. Numbers already on the list stay as they are.</p>
  <form method="post" action="/developers/suppressions/import" class="stack">
    ${csrfField(user.csrfToken)}
    ${
      problems.length > 0
        ? html`<div class="field-error" role="alert"><p>Nothing was imported: ${problems.length === 1 ? 'one line needs' : `${problems.length} lines need`} fixing.</p>${problemList(problems)}</div>`
        : ''
    }
    <div class="field" data-file-field hidden>
      <label for="import-file">CSV file</label>
      <input id="import-file" type="file" accept=".csv,.txt,text/csv,text/plain" data-fills="import-csv">
      <p class="hint">The file is read into the box below, where you can check it before importing.</p>
    </div>
    <div class="field">
      <label for="import-csv">Numbers</label>
      <textarea id="import-csv" name="csv" rows="8" required spellcheck="false" placeholder="to,reason&#10;+14155550123,Asked not to be called">${form?.csv ?? ''}</textarea>
    </div>
    <div class="field">
      <label for="import-reason">Reason for lines without one <span class="muted">(optional)</span></label>
      <input id="import-reason" name="reason" type="text" maxlength="500" value="${form?.reason ?? ''}" placeholder="Do-not-call list of 24 Nov">
    </div>
    <div><button type="submit" class="button">Import numbers</button></div>
  </form>
</section>`;
}

export function suppressionsPage(input: SuppressionsPageInput): string {
  const rows = input.entries.map((entry) => [
    html`<code>${entry.to}</code>`,
    entry.reason ?? html`<span class="muted">—</span>`,
    time(entry.created_at),
    removeLink(entry),
  ]);
  const columns = [{ label: 'Number' }, { label: 'Reason' }, { label: 'Added' }, { label: '' }];
  return layout(
    {
      title: 'Suppression list',
      user: input.user,
      active: 'suppressions',
      notice: input.notice,
      ...(input.replaceUrl ? { replaceUrl: input.replaceUrl } : {}),
    },
    html`<div class="page-head"><h1>Suppression list</h1><p class="lead">Numbers this account never calls: <code>POST /v1/calls</code> to one of them is refused with <code>403 number_suppressed</code>, and a batch recipient with one ends <code>failed</code> (<code>suppressed</code>) when its turn comes. The list holds for test and live keys alike.</p></div>
<section class="card" aria-labelledby="listed">
  <h2 id="listed">${input.total === 1 ? 'One number' : `${input.total} numbers`}</h2>
  ${table('Suppressed numbers', columns, rows, 'No numbers yet. Add one or import a file below.')}
  ${
    input.paged || input.olderUrl
      ? html`<nav class="pager" aria-label="Pages of numbers">
    ${input.paged ? html`<a href="/developers/suppressions">← Newest</a>` : html`<span></span>`}
    ${input.olderUrl ? html`<a href="${input.olderUrl}">Older numbers →</a>` : ''}
  </nav>`
      : ''
  }
</section>
${addForm(input.user, input.add)}
${importForm(input.user, input.importForm)}`,
  );
}

export function removeSuppressionPage(user: User, entry: Suppression): string {
  return layout(
    { title: 'Remove a number', user, active: 'suppressions' },
    html`<p class="crumbs"><a href="/developers/suppressions">Suppression list</a> /</p>
<section class="card narrow card-danger" aria-labelledby="remove">
  <h1 id="remove">Remove <code>${entry.to}</code> from the list?</h1>
  <p>Added ${time(entry.created_at)}${entry.reason ? html`, because: “${entry.reason}”` : ''}.</p>
  <p><strong>Once removed, the number may be called again</strong>, by single calls and by batches whose recipient has not come up yet. Remove it only if the person asked to be called again.</p>
  <form method="post" action="/developers/suppressions/remove" class="actions">
    ${csrfField(user.csrfToken)}<input type="hidden" name="to" value="${entry.to}">
    <button type="submit" class="button button-danger">Remove from the list</button>
    <a class="button button-quiet" href="/developers/suppressions">Cancel</a>
  </form>
</section>`,
  );
}
