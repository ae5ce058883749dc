import { agentPolicyFor, agentProviders, upsertAgent } from '../../../features/agents/agents.service.js';
import { requiredSettings } from '../../../features/providers/provider-settings.js';
import type { AgentProvider } from '../../../features/agents/agents.tables.js';
import { isE164 } from '../../../lib/phone-numbers.js';
import { choiceOption, optionalOption, requiredOption, UsageError } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

const defaultProvider: AgentProvider = 'simulator';

export const addAgentCommand: Command = {
  name: 'add',
  summary: 'Add a voice agent to an account, or update the one with the same --agent-id',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account that owns the agent (acct_...)', required: true },
    'agent-id': {
      value: 'AGENT_ID',
      description: "callgate's agent id (agent_...), the agent_id of API calls; for elevenlabs, the ElevenLabs agent id",
      required: true,
    },
    name: { value: 'NAME', description: 'Name shown to people', required: true },
    provider: {
      value: agentProviders.join('|'),
      description: `Voice provider (default ${defaultProvider}); elevenlabs, retell and vapi need ${Object.values(requiredSettings).join(', ')} set`,
    },
    'provider-agent-id': {
      value: 'ID',
      description: "retell and vapi: the provider's id of the agent (Retell agent id, Vapi assistant id)",
    },
    'phone-number-id': { value: 'ID', description: "elevenlabs and vapi: the provider's id of the phone number calls come from" },
    'from-number': { value: 'E164', description: 'retell: the Retell number calls come from (E.164, such as +14155550100)' },
  },
  prepare(args) {
    const provider = choiceOption(args, 'provider', agentProviders, defaultProvider);
    const fromNumber = optionalOption(args, 'from-number')?.trim();
    const phoneNumberId = optionalOption(args, 'phone-number-id');
    const providerAgentId = optionalOption(args, 'provider-agent-id');
    if (fromNumber !== undefined && provider !== 'retell') throw new UsageError('option --from-number is for --provider retell');
    if (provider === 'retell' && phoneNumberId !== undefined)
      throw new UsageError('a retell agent takes --from-number, not --phone-number-id');
    if (fromNumber !== undefined && !isE164(fromNumber)) {
      throw new UsageError(`option --from-number must be an E.164 number such as +14155550100, got "${fromNumber}"`);
    }
    if (providerAgentId !== undefined && provider !== 'retell' && provider !== 'vapi') {
      throw new UsageError('option --provider-agent-id is for --provider retell or vapi');
    }
    const input = {
      accountId: requiredOption(args, 'account'),
      agentId: requiredOption(args, 'agent-id'),
      name: requiredOption(args, 'name'),
      provider,
      ...(providerAgentId === undefined ? {} : { providerAgentId }),
      // A Retell number is known by the number itself: it is its id there.
      phoneNumberId: (provider === 'retell' ? fromNumber : phoneNumberId) ?? null,
      ...(fromNumber === undefined ? {} : { phoneNumber: fromNumber }),
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
          ...(agent.provider_agent_id === null ? [] : [['provider agent id', agent.provider_agent_id] as [string, string]]),
          [agent.provider === 'retell' ? 'from number' : 'phone number id', agent.phone_number_id],
        ]),
      ].join('\n');
      return { json: { ...agent, created }, text };
    };
  },
};
