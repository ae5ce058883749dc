import { syncElevenLabsAgents } from '../../../features/agents/agents-sync.service.js';
import { createElevenLabsClient } from '../../../features/providers/elevenlabs/elevenlabs.client.js';
import { requiredOption } from '../../args.js';
import { CliError, requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

export const syncAgentsCommand: Command = {
  name: 'sync',
  summary: "Add or update an account's agents from the ElevenLabs workspace, with their phone numbers",
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account that receives the agents (acct_...); needs ELEVENLABS_API_KEY', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ config, db, clock, progress }) => {
      const { apiKey, baseUrl } = config.elevenlabs;
      if (!apiKey) throw new CliError('agents sync needs ELEVENLABS_API_KEY: set it to the API key of the ElevenLabs workspace');
      await requireAccount(db, accountId);
      const client = createElevenLabsClient({ apiKey, baseUrl, timeoutMs: config.providerTimeoutMs });
      const result = await syncElevenLabsAgents(db, clock, client, accountId, ({ agentsListed, page }) =>
        progress(`listed ${agentsListed} agents (page ${page})…`),
      );
      const summary = `Synced account ${accountId} with ElevenLabs: ${result.added} added, ${result.updated} updated, ${result.skipped.length} skipped.`;
      const agents =
        result.agents.length === 0
          ? []
          : ['', formatTable(['agent id', 'name', 'phone number id', 'number kind', 'phone number'], result.agents.map((agent) => [
              agent.agent_id,
              agent.name,
              agent.phone_number_id,
              agent.phone_number_provider,
              agent.phone_number,
            ]))];
      const skipped =
        result.skipped.length === 0
          ? []
          : ['', 'Skipped:', ...result.skipped.map((entry) => `  ${entry.agent_id}: ${entry.reason}`)];
      return { json: result, text: [summary, ...agents, ...skipped].join('\n') };
    };
  },
};
