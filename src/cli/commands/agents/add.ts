import { agentPolicyFor, upsertAgent } from '../../../features/agents/agents.service.js';
import {
  agentProviders,
  isRealProvider,
  providerCatalogue,
  providerEntry,
  type AgentProvider,
} from '../../../features/providers/provider-catalogue.js';
import { isE164 } from '../../../lib/phone-numbers.js';
import { choiceOption, optionalOption, requiredOption, UsageError } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

const defaultProvider: AgentProvider = 'simulator';

/** What each provider's entry asks of its agents, for the options' help and checks. */
const entries = [...providerCatalogue];
const namesOf = (list: typeof entries) => list.map((entry) => entry.name).join(', ');
const withOwnId = entries.filter((entry) => entry.agents.providerAgentId !== undefined);
const byFromNumber = entries.filter((entry) => entry.agents.number === 'from-number');
const byNumberId = entries.filter((entry) => entry.agents.number === 'phone-number-id');
const numberOption = (provider: AgentProvider) => (isRealProvider(provider) ? providerEntry(provider).agents.number : 'phone-number-id');

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
      description: `Voice provider (default ${defaultProvider}); ${entries.map((entry) => `${entry.name} needs ${entry.settings.apiKey}`).join(', ')} set`,
    },
    'provider-agent-id': {
      value: 'ID',
      description: `${namesOf(withOwnId)}: the provider's id of the agent (${withOwnId.map((entry) => entry.agents.providerAgentId).join(', ')}); required`,
    },
    'phone-number-id': { value: 'ID', description: `${namesOf(byNumberId)}: the provider's id of the phone number calls come from` },
    'from-number': {
      value: 'E164',
      description: `${namesOf(byFromNumber)}: the number calls come from, which is its id there (E.164, such as +14155550100)`,
    },
  },
  prepare(args) {
    const provider = choiceOption(args, 'provider', agentProviders, defaultProvider);
    const fromNumber = optionalOption(args, 'from-number')?.trim();
    const phoneNumberId = optionalOption(args, 'phone-number-id');
    const providerAgentId = optionalOption(args, 'provider-agent-id');
    const byNumber = numberOption(provider) === 'from-number';
    if (fromNumber !== undefined && !byNumber) {
      throw new UsageError(`option --from-number is for ${byFromNumber.map((entry) => `--provider ${entry.name}`).join(' or ')}`);
    }
    if (byNumber && phoneNumberId !== undefined) throw new UsageError(`a ${provider} agent takes --from-number, not --phone-number-id`);
    if (fromNumber !== undefined && !isE164(fromNumber)) {
      throw new UsageError(`option --from-number must be an E.164 number such as +14155550100, got "${fromNumber}"`);
    }
    if (providerAgentId !== undefined && !withOwnId.some((entry) => entry.name === provider)) {
      throw new UsageError(`option --provider-agent-id is for ${withOwnId.map((entry) => `--provider ${entry.name}`).join(' or ')}`);
    }
    const input = {
      accountId: requiredOption(args, 'account'),
      agentId: requiredOption(args, 'agent-id'),
      name: requiredOption(args, 'name'),
      provider,
      ...(providerAgentId === undefined ? {} : { providerAgentId }),
      // A number known by the number itself (Retell's): it is its id there.
      phoneNumberId: (byNumber ? fromNumber : phoneNumberId) ?? null,
      ...(fromNumber === undefined ? {} : { phoneNumber: fromNumber }),
    };
    return async ({ config, db, clock }) => {
      await requireAccount(db, input.accountId);
      // The server's rule: no agents for a provider it has no credentials for (provider-catalogue.ts).
      const { agent, created } = await upsertAgent(db, clock, input, agentPolicyFor(config));
      const text = [
        `${created ? 'Added' : 'Updated'} agent ${agent.agent_id} in account ${agent.account_id}.`,
        formatFields([
          ['id', agent.id],
          ['name', agent.name],
          ['provider', agent.provider],
          ...(agent.provider_agent_id === null ? [] : [['provider agent id', agent.provider_agent_id] as [string, string]]),
          [numberOption(agent.provider) === 'from-number' ? 'from number' : 'phone number id', agent.phone_number_id],
        ]),
      ].join('\n');
      return { json: { ...agent, created }, text };
    };
  },
};
