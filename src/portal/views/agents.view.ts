import type { AgentView } from '../../features/agents/agents.service.js';
import { providerCatalogue, providerLabel, type RealProvider } from '../../features/providers/provider-catalogue.js';
import { copyable, csrfField, table, time } from './components.js';
import { html } from '../../lib/html.js';
import { layout, type PageFrame } from './layout.view.js';

/** The provider of an agent, with its own id of the agent when that is not callgate's (Retell, Vapi). */
function providerCell(agent: AgentView) {
  return agent.provider_agent_id
    ? html`${agent.provider}<br><code class="small" title="${providerLabel(agent.provider)}'s id of the agent">${agent.provider_agent_id}</code>`
    : agent.provider;
}

export function agentsPage(
  user: NonNullable<PageFrame['user']>,
  agents: readonly AgentView[],
  options: { syncable: readonly RealProvider[]; notice?: string; error?: string },
): string {
  const rows = agents.map((agent, index) => [
    agent.name,
    copyable(`agent-${index}`, agent.agent_id),
    providerCell(agent),
    agent.phone_number_id
      ? html`${agent.phone_number && agent.phone_number !== agent.phone_number_id ? html`${agent.phone_number}<br>` : ''}<code class="small">${agent.phone_number_id}</code>${agent.phone_number_provider ? html` <span class="muted small">${agent.phone_number_provider}</span>` : ''}`
      : html`<span class="muted">—</span>`,
    time(agent.created_at),
  ]);
  const { syncable } = options;
  const names = syncable.map((provider) => providerLabel(provider));
  const labels = names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names.at(-1)}` : (names[0] ?? '');
  const syncForms = syncable.map(
    (provider) =>
      html`<form method="post" action="/developers/agents/sync" class="inline">${csrfField(user.csrfToken)}<input type="hidden" name="provider" value="${provider}"><button type="submit" class="button">Sync from ${providerLabel(provider)}</button></form>`,
  );
  const settings = providerCatalogue.map((entry) => html`<code>${entry.settings.apiKey}</code>`);
  return layout(
    {
      title: 'Agents',
      user,
      active: 'agents',
      notice: options.notice,
      error: options.error,
      ...(options.notice || options.error ? { replaceUrl: '/developers/agents' } : {}),
    },
    html`<div class="page-head">
  <h1>Agents</h1>
  <p class="lead">The voice agents of your account. Use an agent's id as <code>agent_id</code> in <code>POST /v1/calls</code>. A <code>simulator</code> agent places simulated calls, for trying the API with a test key.</p>
</div>
<section class="card">
  ${
    syncable.length > 0
      ? html`<div class="card-head"><p class="muted small">Import the agents of this server's ${labels} workspace${syncable.length > 1 ? 's' : ''}, with their phone numbers (agents already here are updated).</p><div class="actions">${syncForms}</div></div>`
      : ''
  }
  ${table('Agents', [{ label: 'Name' }, { label: 'Agent id' }, { label: 'Provider' }, { label: 'Phone number' }, { label: 'Added' }], rows, 'No agents yet.')}
  <p class="muted small">${
    syncable.length > 0
      ? html`Agents are defined at the voice provider (${labels}); your callgate operator can also add one by hand (<code>npx callgate agents add</code>).`
      : html`Agents for real calls are defined at the voice provider and added by your callgate operator (<code>npx callgate agents add</code> or <code>agents sync</code>, once the server has ${settings.map((setting, index) => html`${index === 0 ? '' : index === settings.length - 1 ? ' or ' : ', '}${setting}`)}).`
  }</p>
</section>`,
  );
}
