import { ApiError } from '../../../errors/api-error.js';
import { syncAgents } from '../../../features/agents/agents-sync.service.js';
import {
  agentDirectoryFor,
  providerCatalogue,
  providerEntry,
  realProviders,
  type RealProvider,
} from '../../../features/providers/provider-catalogue.js';
import { choiceOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

/** The catalogue's first provider, as before there were others. */
const defaultProvider: RealProvider = providerCatalogue[0].name;

export const syncAgentsCommand: Command = {
  name: 'sync',
  summary: `Add or update an account's agents from a provider's workspace (${providerCatalogue.map((entry) => entry.label).join(', ')}), with their phone numbers`,
  options: {
    account: {
      value: 'ACCOUNT_ID',
      description: `Account that receives the agents (acct_...); needs the provider's key (${providerCatalogue.map((entry) => entry.settings.apiKey).join(', ')})`,
      required: true,
    },
    provider: {
      value: realProviders.join('|'),
      description: `The workspace to sync with (default ${defaultProvider}); ${providerCatalogue
        .filter((entry) => entry.agents.providerAgentId !== undefined)
        .map((entry) => entry.label)
        .join(' and ')} agents get agent_<provider>_<their id> unless already here`,
    },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const provider = choiceOption(args, 'provider', realProviders, defaultProvider);
    const entry = providerEntry(provider);
    const { label } = entry;
    return async ({ config, db, clock, progress }) => {
      const directory = agentDirectoryFor(provider, config);
      if (!directory) {
        throw new ApiError(
          'provider_unavailable',
          `agents sync needs ${entry.settings.apiKey}: set it to the API key of the ${label} workspace`,
        );
      }
      await requireAccount(db, accountId);
      const result = await syncAgents(db, clock, directory, accountId, ({ agentsListed, page }) =>
        progress(`listed ${agentsListed} agents (page ${page})…`),
      );
      const summary = `Synced account ${accountId} with ${label}: ${result.added} added, ${result.updated} updated, ${result.skipped.length} skipped.`;
      const ownIds = entry.agents.providerAgentId !== undefined;
      const agents =
        result.agents.length === 0
          ? []
          : [
              '',
              formatTable(
                ['agent id', 'name', ...(ownIds ? [`${label} id`] : []), 'phone number id', 'number kind', 'phone number'],
                result.agents.map((agent) => [
                  agent.agent_id,
                  agent.name,
                  ...(ownIds ? [agent.provider_agent_id] : []),
                  agent.phone_number_id,
                  agent.phone_number_provider,
                  agent.phone_number,
                ]),
              ),
            ];
      const skipped =
        result.skipped.length === 0 ? [] : ['', 'Skipped:', ...result.skipped.map((entry) => `  ${entry.agent_id}: ${entry.reason}`)];
      return { json: result, text: [summary, ...agents, ...skipped].join('\n') };
    };
  },
};
