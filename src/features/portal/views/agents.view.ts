import type { AgentView } from '../../agents/agents.service.js';
import { copyable, table, time } from './components.js';
import { html } from './html.js';
import { layout, type PageFrame } from './layout.view.js';

export function agentsPage(user: NonNullable<PageFrame['user']>, agents: readonly AgentView[]): string {
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
    { title: 'Agents', user, active: 'agents' },
    html`<div class="page-head">
  <h1>Agents</h1>
  <p class="lead">The voice agents of your account. Use an agent's id as <code>agent_id</code> in <code>POST /v1/calls</code>.</p>
</div>
<section class="card">
  ${table('Agents', [{ label: 'Name' }, { label: 'Agent id' }, { label: 'Provider' }, { label: 'Phone number' }, { label: 'Added' }], rows, 'No agents yet.')}
  <p class="muted small">Agents are defined at the voice provider and added by your callgate operator (<code>npx callgate agents add</code> or <code>agents sync</code>).</p>
</section>`,
  );
}
