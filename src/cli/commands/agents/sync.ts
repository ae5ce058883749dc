import { ApiError } from '../../../errors/api-error.js';
import { syncAgents } from '../../../features/agents/agents-sync.service.js';
import { createElevenLabsDirectory } from '../../../features/providers/elevenlabs/elevenlabs.directory.js';
import { elevenLabsClientFor, elevenLabsKeySetting } from '../../../features/providers/provider-settings.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

export const syncAgentsCommand: Command = {
  name: 'sync',
  summary: "Add or update an account's agents from the ElevenLabs workspace, with their phone numbers",
  options: {
    account: {
      value: 'ACCOUNT_ID',
      description: `Account that receives the agents (acct_...); needs ${elevenLabsKeySetting}`,
      required: true,
    },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ config, db, clock, progress }) => {
      const client = elevenLabsClientFor(config);
      if (!client) {
        throw new ApiError(
          'provider_unavailable',
          `agents sync needs ${elevenLabsKeySetting}: set it to the API key of the ElevenLabs workspace`,
        );
      }
      await requireAccount(db, accountId);
      const result = await syncAgents(db, clock, createElevenLabsDirectory(client), accountId, ({ agentsListed, page }) =>
        progress(`listed ${agentsListed} agents (page ${page})…`),
      );
      const summary = `Synced account ${accountId} with ElevenLabs: ${result.added} added, ${result.updated} updated, ${result.skipped.length} skipped.`;
      const agents =
        result.agents.length === 0
          ? []
          : [
              '',
              formatTable(
                ['agent id', 'name', 'phone number id', 'number kind', 'phone number'],
                result.agents.map((agent) => [
                  agent.agent_id,
                  agent.name,
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
