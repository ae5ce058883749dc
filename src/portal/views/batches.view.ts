import type { AgentView } from '../../features/agents/agents.service.js';
import type { ApiKeyView } from '../../features/api-keys/api-keys.service.js';
import type { ApiKeyMode } from '../../features/api-keys/api-keys.tables.js';
import type { Batch, BatchCounts, Recipient } from '../../features/batches/batches.schemas.js';
import {
  maxAttemptsLimit,
  maxConcurrencyDefault,
  maxConcurrencyLimit,
  nameMaxLength,
  recipientsMax,
  retryDefaults,
  retryDelayMinutesLimit,
  retryReasons,
} from '../../features/batches/batches.schemas.js';
import { recipientZone, weekdays } from '../../features/batches/calling-window.js';
import type { BatchStatus, RecipientStatus } from '../../features/batches/batches.tables.js';
import { callingWindowInWords, retryInWords } from '../../features/batches/batch-words.js';
import type { CsvProblem } from '../../lib/csv.js';
import { badge, copyable, csrfField, portalPath, table, time } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

type User = NonNullable<PageFrame['user']>;

const statusTones: Record<BatchStatus | RecipientStatus, string> = {
  scheduled: 'neutral',
  running: 'info',
  paused: 'warn',
  completed: 'ok',
  cancelled: 'neutral',
  queued: 'neutral',
  dialing: 'info',
  in_progress: 'info',
  failed: 'bad',
};

function statusBadge(status: BatchStatus | RecipientStatus): SafeHtml {
  return badge(status, statusTones[status]);
}

/** The order of a progress bar: what has ended first, then what is under way, then what waits. */
const progressOrder = [
  'completed',
  'failed',
  'cancelled',
  'in_progress',
  'dialing',
  'queued',
] as const satisfies readonly RecipientStatus[];

const stateLabel = (state: RecipientStatus) => state.replace('_', ' ');

/**
 * A batch's recipients by state as a stacked bar, with the same counts in words beside it: the colours are
 * decoration (hidden from screen readers), the text says everything. An SVG, whose widths are attributes:
 * the portal's content security policy allows no inline style.
 */
export function progressBar(counts: BatchCounts, options: { compact?: boolean } = {}): SafeHtml {
  const total = Math.max(counts.total, 1);
  let x = 0;
  const segments = progressOrder.flatMap((state) => {
    const count = counts[state];
    if (count === 0) return [];
    const rect = html`<rect class="progress-${state}" x="${String(x)}" y="0" width="${String(count)}" height="1"></rect>`;
    x += count;
    return [rect];
  });
  const ended = counts.completed + counts.failed + counts.cancelled;
  const parts = progressOrder
    .filter((state) => counts[state] > 0 || !options.compact)
    .map(
      (state) =>
        html`<li><span class="progress-key progress-${state}" aria-hidden="true"></span>${String(counts[state])} ${stateLabel(state)}</li>`,
    );
  return html`<div class="progress">
  <svg class="progress-bar" viewBox="0 0 ${String(total)} 1" preserveAspectRatio="none" aria-hidden="true" focusable="false">${segments}</svg>
  <p class="progress-summary">${String(ended)} of ${String(counts.total)} ended</p>
  <ul class="progress-legend" aria-label="Recipients by state">${parts}</ul>
</div>`;
}

export const batchStatusFilters: readonly BatchStatus[] = ['scheduled', 'running', 'paused', 'completed', 'cancelled'];
export const recipientStatusFilters: readonly RecipientStatus[] = ['queued', 'dialing', 'in_progress', 'completed', 'failed', 'cancelled'];
export const modeFilters: readonly ApiKeyMode[] = ['test', 'live'];

export type BatchWithMode = Batch & { readonly mode: ApiKeyMode | undefined };

export interface BatchesPageInput {
  readonly user: User;
  readonly batches: readonly BatchWithMode[];
  readonly status: BatchStatus | undefined;
  readonly mode: ApiKeyMode | undefined;
  readonly paged: boolean;
  readonly olderUrl: string | undefined;
  readonly newestUrl: string;
  readonly notice?: string | undefined;
}

function batchTitle(batch: Batch): SafeHtml {
  return html`<a href="${portalPath('batches', batch.id)}">${batch.name ?? html`<code>${batch.id}</code>`}</a>${batch.name ? html`<br><code class="small">${batch.id}</code>` : ''}`;
}

export function batchesPage(input: BatchesPageInput): string {
  const filtered = input.status !== undefined || input.mode !== undefined;
  const rows = input.batches.map((batch) => [
    time(batch.created_at),
    batchTitle(batch),
    batch.mode ? badge(batch.mode) : '',
    statusBadge(batch.status),
    time(batch.scheduled_at),
    progressBar(batch.counts, { compact: true }),
  ]);
  const columns = [
    { label: 'Created' },
    { label: 'Batch' },
    { label: 'Mode' },
    { label: 'Status' },
    { label: 'Scheduled' },
    { label: 'Progress' },
  ];
  return layout(
    { title: 'Batches', user: input.user, active: 'batches', notice: input.notice },
    html`<div class="page-head page-head-actions">
  <div><h1>Batches</h1><p class="lead">Many calls from one request, dialed under a concurrency limit. Newest first.</p></div>
  <div class="actions"><a class="button button-primary" href="/developers/batches/new">New batch from a CSV file</a></div>
</div>
<section class="card">
  <form method="get" action="/developers/batches" class="toolbar">
    <div class="field">
      <label for="status">Status</label>
      <select id="status" name="status">
        <option value="">Any status</option>
        ${batchStatusFilters.map((status) => html`<option value="${status}"${status === input.status ? html` selected` : ''}>${status}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="mode">Mode</label>
      <select id="mode" name="mode">
        <option value="">Test and live</option>
        ${modeFilters.map((mode) => html`<option value="${mode}"${mode === input.mode ? html` selected` : ''}>${mode}</option>`)}
      </select>
    </div>
    <button type="submit" class="button">Filter</button>
    ${filtered ? html`<a class="button button-quiet" href="/developers/batches">Clear</a>` : ''}
  </form>
  ${table('Batches', columns, rows, filtered ? 'No batches match these filters.' : 'No batches yet.')}
  <nav class="pager" aria-label="Pages of batches">
    ${input.paged ? html`<a href="${input.newestUrl}">← Newest</a>` : html`<span></span>`}
    ${input.olderUrl ? html`<a href="${input.olderUrl}">Older batches →</a>` : ''}
  </nav>
</section>`,
  );
}

export interface BatchPageInput {
  readonly user: User;
  readonly batch: BatchWithMode;
  readonly recipients: readonly Recipient[];
  readonly recipientStatus: RecipientStatus | undefined;
  readonly paged: boolean;
  readonly nextUrl: string | undefined;
  readonly firstUrl: string;
  readonly notice?: string | undefined;
  readonly error?: string | undefined;
}

/** The actions a batch in this state takes: a finished batch takes none. */
export function batchActions(status: BatchStatus): readonly ('pause' | 'resume' | 'cancel')[] {
  if (status === 'scheduled' || status === 'running') return ['pause', 'cancel'];
  if (status === 'paused') return ['resume', 'cancel'];
  return [];
}

const actionLabels = { pause: 'Pause', resume: 'Resume', cancel: 'Cancel batch' } as const;

/** Why its latest call failed (a queued one: why it waits for a retry), with the words that came with it. */
function lastFailure(recipient: Recipient): SafeHtml {
  if (recipient.last_failure_reason === null) return html`<span class="muted">—</span>`;
  return html`<code>${recipient.last_failure_reason}</code>${recipient.last_failure_message ? html`<div class="muted small">${recipient.last_failure_message}</div>` : ''}`;
}

function recipientsTable(recipients: readonly Recipient[], empty: string): SafeHtml {
  const rows = recipients.map((recipient) => [
    // The number with your reference for it below, the times on two lines: every column fits the card at 1280 px.
    html`<span class="id">${recipient.to}</span>${recipient.reference === null ? '' : html`<div class="muted small break">${recipient.reference}</div>`}`,
    statusBadge(recipient.status),
    lastFailure(recipient),
    String(recipient.attempts),
    // Every attempt's call, the latest last.
    recipient.call_ids.length > 0
      ? recipient.call_ids.map(
          (callId, index) =>
            html`${index > 0 ? html`<br>` : ''}<a href="${portalPath('calls', callId)}"><code class="id">${callId}</code></a>`,
        )
      : html`<span class="muted">—</span>`,
    time(recipient.next_attempt_at, { wrap: true }),
    time(recipient.updated_at, { wrap: true }),
  ]);
  const columns = [
    { label: 'Recipient' },
    { label: 'Status' },
    { label: 'Last failure' },
    { label: 'Attempts', numeric: true },
    { label: 'Calls' },
    { label: 'Next attempt' },
    { label: 'Updated' },
  ];
  return table('Recipients', columns, rows, empty);
}

export function batchPage(input: BatchPageInput): string {
  const { batch, user } = input;
  const here = portalPath('batches', batch.id);
  const actions = batchActions(batch.status);
  return layout(
    { title: `Batch ${batch.name ?? batch.id}`, user, active: 'batches', notice: input.notice, error: input.error },
    html`<p class="crumbs"><a href="/developers/batches">Batches</a> /</p>
<div class="page-head page-head-actions">
  <div><h1 class="break">${batch.name ?? copyable('batch-id', batch.id)}</h1><p>${statusBadge(batch.status)} ${batch.mode ? badge(batch.mode) : ''}</p></div>
  ${
    actions.length > 0
      ? html`<div class="actions">${actions.map(
          (action) =>
            html`<form method="post" action="${portalPath('batches', batch.id, action)}" class="inline">${csrfField(user.csrfToken)}<button type="submit" class="button${action === 'cancel' ? ' button-danger-quiet' : ''}">${actionLabels[action]}</button></form>`,
        )}</div>`
      : ''
  }
</div>
<div class="grid-2">
<section class="card" aria-labelledby="details">
  <h2 id="details">Details</h2>
  <dl class="facts">
    <dt>Batch id</dt><dd>${batch.name ? copyable('batch-id', batch.id) : html`<code>${batch.id}</code>`}</dd>
    <dt>Agent</dt><dd><code>${batch.agent_id}</code></dd>
    <dt>Scheduled</dt><dd>${time(batch.scheduled_at)}</dd>
    <dt>Concurrency</dt><dd>at most ${String(batch.max_concurrency)} calls at once</dd>
    <dt>Calling window</dt><dd>${callingWindowInWords(batch.calling_window)}</dd>
    <dt>Retries</dt><dd>${retryInWords(batch.retry)}</dd>
    <dt>Created</dt><dd>${time(batch.created_at)}</dd>
    <dt>Ended</dt><dd>${time(batch.completed_at)}</dd>
  </dl>
</section>
<section class="card" aria-labelledby="progress">
  <div class="card-head"><h2 id="progress">Progress</h2><a href="${here}">Refresh</a></div>
  ${progressBar(batch.counts)}
</section>
</div>
<section class="card" aria-labelledby="recipients">
  <h2 id="recipients">Recipients</h2>
  <form method="get" action="${here}" class="toolbar">
    <div class="field">
      <label for="recipient-status">State</label>
      <select id="recipient-status" name="status">
        <option value="">Any state</option>
        ${recipientStatusFilters.map(
          (status) =>
            html`<option value="${status}"${status === input.recipientStatus ? html` selected` : ''}>${stateLabel(status)} (${String(batch.counts[status])})</option>`,
        )}
      </select>
    </div>
    <button type="submit" class="button">Filter</button>
    ${input.recipientStatus ? html`<a class="button button-quiet" href="${here}">Clear</a>` : ''}
  </form>
  ${recipientsTable(input.recipients, input.recipientStatus ? `No recipient is ${stateLabel(input.recipientStatus)}.` : 'No recipients.')}
  <nav class="pager" aria-label="Pages of recipients">
    ${input.paged ? html`<a href="${input.firstUrl}">← First recipients</a>` : html`<span></span>`}
    ${input.nextUrl ? html`<a href="${input.nextUrl}">Next recipients →</a>` : ''}
  </nav>
</section>`,
  );
}

export interface BatchFormValues {
  readonly apiKeyId: string;
  readonly agentId: string;
  readonly name: string;
  readonly scheduledAt: string;
  readonly maxConcurrency: string;
  /** The calling window: none while start, end, days and time zone are all left empty. */
  readonly windowStart: string;
  readonly windowEnd: string;
  readonly windowDays: readonly string[];
  readonly windowTimeZone: string;
  readonly windowFallbackTimeZone: string;
  /** Retries: none while the dials per recipient are 1. */
  readonly retryOn: readonly string[];
  readonly retryMaxAttempts: string;
  readonly retryDelayMinutes: string;
  /** The CSV pasted in the text box (a chosen file cannot be given back to the browser). */
  readonly csvText: string;
}

export interface BatchFormPageInput {
  readonly user: User;
  readonly keys: readonly ApiKeyView[];
  readonly agents: readonly AgentView[];
  readonly values: BatchFormValues;
  readonly formToken: string;
  readonly error?: string | undefined;
  readonly problems?: readonly CsvProblem[];
  /** The CSV came from a file: it must be chosen again once fixed. */
  readonly fromFile?: boolean;
}

export const emptyBatchForm: BatchFormValues = {
  apiKeyId: '',
  agentId: '',
  name: '',
  scheduledAt: '',
  maxConcurrency: String(maxConcurrencyDefault),
  windowStart: '',
  windowEnd: '',
  windowDays: [],
  windowTimeZone: '',
  windowFallbackTimeZone: '',
  retryOn: [...retryDefaults.on],
  retryMaxAttempts: String(retryDefaults.max_attempts),
  retryDelayMinutes: String(retryDefaults.delay_minutes),
  csvText: '',
};

const retryLabels = { busy: 'Busy', no_answer: 'No answer', voicemail: 'Voicemail' } as const;

function windowFields(values: BatchFormValues): SafeHtml {
  return html`<fieldset class="form-section">
      <legend>Calling window <span class="muted">(optional)</span></legend>
      <p class="hint" id="window-hint">Recipients are dialed only between these times, on these days, in the time zone given: a named one, or <code>${recipientZone}</code> for each number's own zones (then the fallback zone serves numbers of no known zone). Leave empty to dial at any hour.</p>
      <div class="field-row">
        <div class="field">
          <label for="window_start">From <span class="muted">(HH:MM)</span></label>
          <input id="window_start" name="window_start" type="time" value="${values.windowStart}" aria-describedby="window-hint">
        </div>
        <div class="field">
          <label for="window_end">Until <span class="muted">(HH:MM, after the start)</span></label>
          <input id="window_end" name="window_end" type="time" value="${values.windowEnd}">
        </div>
      </div>
      <fieldset class="field">
        <legend>Days <span class="muted">(none ticked: every day)</span></legend>
        <div class="choices-inline">${weekdays.map(
          (day) =>
            html`<label class="choice"><input type="checkbox" name="window_days" value="${day}"${values.windowDays.includes(day) ? html` checked` : ''}> ${day}</label>`,
        )}</div>
      </fieldset>
      <div class="field-row field-row-inputs-aligned">
        <div class="field">
          <label for="window_time_zone">Time zone <span class="muted">(a name or ${recipientZone})</span></label>
          <input id="window_time_zone" name="window_time_zone" type="text" maxlength="100" spellcheck="false" value="${values.windowTimeZone}" placeholder="America/New_York">
        </div>
        <div class="field">
          <label for="window_fallback_time_zone">Fallback time zone <span class="muted">(with ${recipientZone})</span></label>
          <input id="window_fallback_time_zone" name="window_fallback_time_zone" type="text" maxlength="100" spellcheck="false" value="${values.windowFallbackTimeZone}" placeholder="America/New_York">
        </div>
      </div>
    </fieldset>`;
}

function retryFields(values: BatchFormValues): SafeHtml {
  return html`<fieldset class="form-section">
      <legend>Retries <span class="muted">(optional)</span></legend>
      <p class="hint" id="retry-hint">A recipient whose call ended for a reason ticked here is dialed again after the delay (inside its calling window), until it has had the dials given. 1 dial: no retry.</p>
      <fieldset class="field">
        <legend>Retry when</legend>
        <div class="choices-inline">${retryReasons.map(
          (reason) =>
            html`<label class="choice"><input type="checkbox" name="retry_on" value="${reason}"${values.retryOn.includes(reason) ? html` checked` : ''}> ${retryLabels[reason]}</label>`,
        )}</div>
      </fieldset>
      <div class="field-row">
        <div class="field">
          <label for="retry_max_attempts">Dials per recipient</label>
          <input id="retry_max_attempts" name="retry_max_attempts" type="number" min="1" max="${String(maxAttemptsLimit)}" step="1" required value="${values.retryMaxAttempts}" aria-describedby="retry-hint">
        </div>
        <div class="field">
          <label for="retry_delay_minutes">Minutes between dials</label>
          <input id="retry_delay_minutes" name="retry_delay_minutes" type="number" min="1" max="${String(retryDelayMinutesLimit)}" step="1" required value="${values.retryDelayMinutes}">
        </div>
      </div>
    </fieldset>`;
}

function problemsSection(problems: readonly CsvProblem[], fromFile: boolean): SafeHtml {
  const rows = problems.map((problem) => [
    problem.line === 0 ? html`<span class="muted">file</span>` : String(problem.line),
    problem.message,
  ]);
  const count = problems.length === 1 ? 'One problem' : `${problems.length.toLocaleString('en')} problems`;
  return html`<section class="card card-danger" aria-labelledby="csv-problems" role="alert">
  <h2 id="csv-problems">${count} in the CSV: no batch was created</h2>
  <p>Fix every line below${fromFile ? ', then choose the file again' : ''} and create the batch again.</p>
  ${table('Problems in the CSV', [{ label: 'Line', numeric: true }, { label: 'Problem' }], rows, '')}
</section>`;
}

export function batchFormPage(input: BatchFormPageInput): string {
  const { values, user } = input;
  const activeKeys = input.keys.filter((key) => key.status === 'active');
  const missing =
    activeKeys.length === 0
      ? html`<p>A batch is placed with one of your API keys (its mode decides whether calls are simulated). <a href="/developers/api-keys">Create a key</a> first.</p>`
      : input.agents.length === 0
        ? html`<p>A batch needs an agent to place its calls. <a href="/developers/agents">Add an agent</a> first.</p>`
        : undefined;
  // In sections, two side by side on a wide screen: one narrow column was 2,100 px tall.
  const form = html`<form method="post" action="/developers/batches" enctype="multipart/form-data" class="batch-form">
    ${csrfField(user.csrfToken)}
    <input type="hidden" name="form_token" value="${input.formToken}">
    <fieldset class="form-section">
    <legend>Who calls</legend>
    <div class="field">
      <label for="api_key_id">API key</label>
      <select id="api_key_id" name="api_key_id" aria-describedby="api-key-hint">
        ${activeKeys.map(
          (key) =>
            html`<option value="${key.id}"${key.id === values.apiKeyId ? html` selected` : ''}>${key.mode}: ${key.name} (${key.prefix}…)</option>`,
        )}
      </select>
      <p class="hint" id="api-key-hint">The batch and its calls belong to this key, in its mode: a test key's calls are simulated (nobody is phoned) and the batch shows to test keys only.</p>
    </div>
    <div class="field">
      <label for="agent_id">Agent</label>
      <select id="agent_id" name="agent_id">
        ${input.agents.map(
          (agent) =>
            html`<option value="${agent.agent_id}"${agent.agent_id === values.agentId ? html` selected` : ''}>${agent.name} (${agent.agent_id})</option>`,
        )}
      </select>
    </div>
    </fieldset>
    <fieldset class="form-section">
    <legend>What and when</legend>
    <div class="field">
      <label for="name">Name <span class="muted">(optional)</span></label>
      <input id="name" name="name" type="text" maxlength="${String(nameMaxLength)}" value="${values.name}" placeholder="Reminders 24 Nov">
    </div>
    <div class="field">
      <label for="scheduled_at">Start at <span class="muted">(UTC, optional)</span></label>
      <input id="scheduled_at" name="scheduled_at" type="datetime-local" step="1" value="${values.scheduledAt}" aria-describedby="scheduled-hint">
      <p class="hint" id="scheduled-hint">Leave empty to start now; at most 30 days ahead.</p>
    </div>
    <div class="field">
      <label for="max_concurrency">Calls at once</label>
      <input id="max_concurrency" name="max_concurrency" type="number" min="1" max="${String(maxConcurrencyLimit)}" step="1" required value="${values.maxConcurrency}" aria-describedby="concurrency-hint">
      <p class="hint" id="concurrency-hint">At most this many calls of the batch are dialing or under way at any moment (1 to ${String(maxConcurrencyLimit)}).</p>
    </div>
    </fieldset>
    ${windowFields(values)}
    ${retryFields(values)}
    <fieldset class="form-section form-section-wide">
    <legend>Recipients</legend>
    <div class="field-row">
    <div class="field">
      <label for="csv_file">Recipients: a CSV file</label>
      <input id="csv_file" name="csv_file" type="file" accept=".csv,text/csv,text/plain" aria-describedby="csv-hint">
      <p class="hint" id="csv-hint">UTF-8, a header line first. A <code>to</code> (or <code>phone</code>) column with numbers in E.164 format (<code>+14155550123</code>), an optional <code>reference</code> column (your own id), and any other column is passed to the agent as a variable of that name. Up to ${recipientsMax.toLocaleString('en')} lines, each number once.</p>
    </div>
    <div class="field">
      <label for="csv_text">…or paste the CSV <span class="muted">(used when no file is chosen)</span></label>
      <textarea id="csv_text" name="csv_text" rows="6" spellcheck="false" placeholder="to,reference,customer_name&#10;+14155550123,appt-881,Ada">${values.csvText}</textarea>
    </div>
    </div>
    </fieldset>
    <div class="actions form-section-wide">
      <button type="submit" class="button button-primary">Create batch</button>
      <a class="button button-quiet" href="/developers/batches">Cancel</a>
    </div>
  </form>`;
  return layout(
    { title: 'New batch', user, active: 'batches', error: input.error },
    html`<p class="crumbs"><a href="/developers/batches">Batches</a> /</p>
${input.problems && input.problems.length > 0 ? problemsSection(input.problems, input.fromFile ?? false) : ''}
<section class="card">
  <h1>New batch from a CSV file</h1>
  ${missing ?? form}
</section>`,
  );
}
