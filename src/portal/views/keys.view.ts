import type { AgentView } from '../../features/agents/agents.service.js';
import type { ApiKeyView } from '../../features/api-keys/api-keys.service.js';
import type { ApiKeyMode } from '../../features/api-keys/api-keys.tables.js';
import { badge, copyButton, csrfField, portalPath, table, time } from './components.js';
import { html, type SafeHtml } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

export interface KeysPageInput {
  readonly user: NonNullable<PageFrame['user']>;
  readonly keys: readonly ApiKeyView[];
  /** The account's agents: a live key's calls on a simulator agent are simulated, yet counted as live. */
  readonly agents: readonly Pick<AgentView, 'agent_id' | 'provider'>[];
  /** The key just created, with its token: only on the answer to the create form. */
  readonly created?: ApiKeyView & { token: string };
  /** The create form was sent again; `key` is the key its first submission made. */
  readonly alreadySent?: { key: ApiKeyView | null };
  /** `formToken` makes each form good for one key (portal-keys.service.ts). */
  readonly form: { name: string; mode: ApiKeyMode; formToken: string; error?: string };
  readonly notice?: string | undefined;
}

/** What a live key's calls are, where the account's agents are (some of them) the simulator; null otherwise. */
function simulatorAgentsOf(agents: KeysPageInput['agents']): { all: boolean; ids: string[] } | null {
  const ids = agents.filter((agent) => agent.provider === 'simulator').map((agent) => agent.agent_id);
  return ids.length === 0 ? null : { all: ids.length === agents.length, ids };
}

/** The live mode said plainly for an account with simulator agents: whose calls are simulated, yet live. */
function liveOnSimulator(simulator: { all: boolean; ids: string[] }): SafeHtml {
  const who = simulator.all
    ? html`Your account's agents are the simulator: a live key's calls are simulated`
    : html`A live key's calls to ${simulator.ids.length === 1 ? 'the simulator agent' : 'the simulator agents'} ${simulator.ids.map((id, index) => html`${index > 0 ? ', ' : ''}<code>${id}</code>`)} are simulated`;
  return html`${who} (nobody is phoned) but counted as live: <code>"livemode": true</code>, sent to live endpoints, in the live charts and among the live calls of the concurrency limit. An agent of a real voice provider places real calls.`;
}

function createdPanel(key: ApiKeyView & { token: string }, simulator: { all: boolean; ids: string[] } | null): SafeHtml {
  return html`<section class="card card-highlight" aria-labelledby="new-key">
  <h2 id="new-key">Your new ${key.mode} key “${key.name}”</h2>
  <p><strong>Copy the token now. It is shown only this once</strong> and cannot be shown again. A lost token cannot be recovered: revoke the key and create another.</p>
  <div class="secret-box"><code id="new-token" class="token">${key.token}</code>${copyButton('new-token', 'Copy token')}</div>
  <p class="muted small">Use it as <code>Authorization: Bearer &lt;token&gt;</code>, on your servers only, never in a browser or a mobile app.</p>
  ${key.mode === 'live' && simulator ? html`<p class="simulated-live">${liveOnSimulator(simulator)}</p>` : ''}
</section>`;
}

function alreadySentPanel(key: ApiKeyView | null): SafeHtml {
  return html`<section class="card card-warn" aria-labelledby="already-sent" role="alert">
  <h2 id="already-sent">This form was already sent: no new key was made</h2>
  <p>${key ? html`Its first submission created the ${key.mode} key “${key.name}” (<code>${key.prefix}…</code>) on ${time(key.created_at)}.` : 'Its first submission created a key.'} That key's token was shown once, on the answer to the first submission, and cannot be shown again.</p>
  <p class="muted small">If you did not copy it, revoke that key and create a new one below.</p>
</section>`;
}

function createForm(
  user: NonNullable<PageFrame['user']>,
  form: KeysPageInput['form'],
  simulator: { all: boolean; ids: string[] } | null,
): SafeHtml {
  const mode = form.mode;
  return html`<section class="card" aria-labelledby="create-key">
  <h2 id="create-key">Create a key</h2>
  <form method="post" action="/developers/api-keys" class="stack">
    ${csrfField(user.csrfToken)}<input type="hidden" name="form_token" value="${form.formToken}">
    ${form.error ? html`<p class="field-error" role="alert">${form.error}</p>` : ''}
    <div class="field">
      <label for="key-name">Name</label>
      <input id="key-name" name="name" type="text" required maxlength="100" value="${form.name}" placeholder="CRM production" aria-describedby="key-name-hint">
      <p class="hint" id="key-name-hint">What the key is for. One key per integration or environment.</p>
    </div>
    <fieldset class="field">
      <legend>Mode</legend>
      <label class="choice"><input type="radio" name="mode" value="test"${mode === 'test' ? html` checked` : ''}> <span><strong>Test</strong>: simulated calls only, nobody is phoned</span></label>
      <label class="choice"><input type="radio" name="mode" value="live"${mode === 'live' ? html` checked` : ''}> <span><strong>Live</strong>: ${
        simulator?.all
          ? "live calls through each agent's voice provider; your agents are the simulator, so they are simulated (nobody is phoned) but counted as live"
          : 'real calls through your voice provider'
      }${simulator && !simulator.all ? ' (simulated, yet counted as live, on a simulator agent)' : ''}</span></label>
    </fieldset>
    <div><button type="submit" class="button button-primary">Create key</button></div>
  </form>
</section>`;
}

export function keysPage(input: KeysPageInput): string {
  const simulator = simulatorAgentsOf(input.agents);
  const rows = input.keys.map((key) => [
    key.name,
    html`<code>${key.prefix}…</code>`,
    key.mode === 'live' && simulator?.all
      ? html`${badge(key.mode)} <span class="muted small">calls simulated (simulator agents), counted as live</span>`
      : badge(key.mode),
    time(key.created_at),
    key.last_used_at ? time(key.last_used_at) : html`<span class="muted">never</span>`,
    html`${badge(key.status)}${key.revoked_at ? html` <span class="muted small">${time(key.revoked_at)}</span>` : ''}`,
    key.status === 'active'
      ? html`<a class="button button-small button-danger-quiet" href="${portalPath('api-keys', key.id, 'revoke')}" aria-label="Revoke key ${key.name}">Revoke…</a>`
      : '',
  ]);
  const columns = [
    { label: 'Name' },
    { label: 'Prefix' },
    { label: 'Mode' },
    { label: 'Created' },
    { label: 'Last used' },
    { label: 'Status' },
    { label: '' },
  ];
  return layout(
    {
      title: 'API keys',
      user: input.user,
      active: 'keys',
      notice: input.notice,
      // The answer to the create form holds the token: with JavaScript a reload shows the list (without,
      // the browser posts the form again and its used one-time token makes no second key).
      ...(input.created || input.alreadySent ? { replaceUrl: '/developers/api-keys' } : {}),
    },
    html`<div class="page-head"><h1>API keys</h1><p class="lead">Keys authenticate requests to the API. The full token is shown once, when the key is created.</p></div>
${input.created ? createdPanel(input.created, simulator) : ''}${input.alreadySent ? alreadySentPanel(input.alreadySent.key) : ''}
<section class="card" aria-labelledby="keys">
  <h2 id="keys">Keys</h2>
  ${table('API keys', columns, rows, 'No keys yet. Create one below.')}
  ${simulator && input.keys.some((key) => key.mode === 'live') ? html`<p class="muted small simulated-live" id="live-on-simulator">${liveOnSimulator(simulator)}</p>` : ''}
</section>
${createForm(input.user, input.form, simulator)}`,
  );
}

export function revokePage(user: NonNullable<PageFrame['user']>, key: ApiKeyView): string {
  return layout(
    { title: 'Revoke key', user, active: 'keys' },
    html`<p class="crumbs"><a href="/developers/api-keys">API keys</a> /</p>
<section class="card narrow card-danger" aria-labelledby="revoke">
  <h1 id="revoke">Revoke “${key.name}”?</h1>
  <p>Key <code>${key.prefix}…</code> (${key.mode}), created ${time(key.created_at)}, last used ${key.last_used_at ? time(key.last_used_at) : 'never'}.</p>
  <p><strong>Revoking is immediate and irreversible.</strong> From the next request on, every request with this key gets <code>401 unauthorized</code>. There is no grace period and the key cannot be restored.</p>
  <p class="muted">Replacing it? Create the new key and update your integration first.</p>
  <form method="post" action="${portalPath('api-keys', key.id, 'revoke')}" class="actions">
    ${csrfField(user.csrfToken)}
    <button type="submit" class="button button-danger">Revoke key now</button>
    <a class="button button-quiet" href="/developers/api-keys">Cancel</a>
  </form>
</section>`,
  );
}
