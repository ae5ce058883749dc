import type { AgentView } from '../../features/agents/agents.service.js';
import { elevenLabsKeySetting } from '../../features/providers/provider-settings.js';
import { copyable, csrfField, table, time } from './components.js';
import { html } from './html.js';
import { layout, type PageFrame } from './layout.view.js';

export function agentsPage(
  user: NonNullable<PageFrame['user']>,
  agents: readonly AgentView[],
  options: { canSync: boolean; notice?: string; error?: string },
): string {
  const rows = agents.map((agent, index) => [
    agent.name,
    copyable(`agent-${index}`, agent.agent_id),
    agent.provider,
    agent.phone_number_id
      ? html`${agent.phone_number ? html`${agent.phone_number}<br>` : ''}<code class="small">${agent.phone_number_id}</code>${agent.phone_number_provider ? html` <span class="muted small">${agent.phone_number_provider}</span>` : ''}`
      : html`<span class="muted">—</span>`,
    time(agent.created_at),
  ]);
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
    options.canSync
      ? html`<form method="post" action="/developers/agents/sync" class="card-head">${csrfField(user.csrfToken)}<p class="muted small">Import the agents of this server's ElevenLabs workspace, with their phone numbers (agents already here are updated).</p><button type="submit" class="button">Sync from ElevenLabs</button></form>`
      : ''
  }
  ${table('Agents', [{ label: 'Name' }, { label: 'Agent id' }, { label: 'Provider' }, { label: 'Phone number' }, { label: 'Added' }], rows, 'No agents yet.')}
  <p class="muted small">${
    options.canSync
      ? html`Agents are defined in ElevenLabs; your callgate operator can also add one by hand (<code>npx callgate agents add</code>).`
      : html`Agents for real calls are defined at the voice provider and added by your callgate operator (<code>npx callgate agents add</code> or <code>agents sync</code>, once the server has <code>${elevenLabsKeySetting}</code>).`
  }</p>
</section>`,
  );
}
