import { listAgents } from '../../../features/agents/agents.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

export const listAgentsCommand: Command = {
  name: 'list',
  summary: 'List the agents of an account',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose agents are listed (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db }) => {
      await requireAccount(db, accountId);
      const agents = await listAgents(db, accountId);
      const text =
        agents.length === 0
          ? `Account ${accountId} has no agents yet.`
          : formatTable(
              ['agent id', 'name', 'provider', 'provider agent', 'phone number id', 'created', 'phone number'],
              agents.map((agent) => [
                agent.agent_id,
                agent.name,
                agent.provider,
                // Retell's agent id or Vapi's assistant id; the others' agents have none (a '-').
                agent.provider_agent_id,
                agent.phone_number_id,
                agent.created_at,
                agent.phone_number,
              ]),
            );
      return { json: { data: agents }, text };
    };
  },
};
