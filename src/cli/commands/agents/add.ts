import { agentPolicyFor, agentProviders, upsertAgent } from '../../../features/agents/agents.service.js';
import { elevenLabsKeySetting } from '../../../features/providers/provider-settings.js';
import type { AgentProvider } from '../../../features/agents/agents.tables.js';
import { choiceOption, optionalOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

const defaultProvider: AgentProvider = 'simulator';

export const addAgentCommand: Command = {
  name: 'add',
  summary: 'Add a voice agent to an account, or update the one with the same --agent-id',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account that owns the agent (acct_...)', required: true },
    'agent-id': { value: 'AGENT_ID', description: "The provider's agent id (agent_...), the agent_id of API calls", required: true },
    name: { value: 'NAME', description: 'Name shown to people', required: true },
    provider: {
      value: agentProviders.join('|'),
      description: `Voice provider (default ${defaultProvider}); elevenlabs needs ${elevenLabsKeySetting} set`,
    },
    'phone-number-id': { value: 'ID', description: "The provider's id of the phone number calls come from" },
  },
  prepare(args) {
    const input = {
      accountId: requiredOption(args, 'account'),
      agentId: requiredOption(args, 'agent-id'),
      name: requiredOption(args, 'name'),
      provider: choiceOption(args, 'provider', agentProviders, defaultProvider),
      phoneNumberId: optionalOption(args, 'phone-number-id') ?? null,
    };
    return async ({ config, db, clock }) => {
      await requireAccount(db, input.accountId);
      // The server's rule: no agents for a provider it has no credentials for (provider-settings.ts).
      const { agent, created } = await upsertAgent(db, clock, input, agentPolicyFor(config));
      const text = [
        `${created ? 'Added' : 'Updated'} agent ${agent.agent_id} in account ${agent.account_id}.`,
        formatFields([
          ['id', agent.id],
          ['name', agent.name],
          ['provider', agent.provider],
          ['phone number id', agent.phone_number_id],
        ]),
      ].join('\n');
      return { json: { ...agent, created }, text };
    };
  },
};
