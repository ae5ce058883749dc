import { createAccount } from '../../../features/identity/accounts.service.js';
import { optionalOption, requiredOption } from '../../args.js';
import type { Command } from '../../command.js';
import { formatFields } from '../../output.js';

export const createAccountCommand: Command = {
  name: 'create',
  summary: 'Create an account with a simulator agent, and its first portal user when --email and --password are given',
  options: {
    name: { value: 'NAME', description: 'Name of the account (a company, a team)', required: true },
    email: { value: 'EMAIL', description: 'Email of the first portal user (needs --password)' },
    password: { value: 'PASSWORD', description: 'Password of that user, at least 10 characters (needs --email)' },
  },
  prepare(args) {
    const input = {
      name: requiredOption(args, 'name'),
      email: optionalOption(args, 'email'),
      password: optionalOption(args, 'password'),
    };
    return async ({ db, clock }) => {
      const account = await createAccount(db, clock, input);
      const user = account.users?.[0];
      const agent = account.agents?.[0];
      const text = [
        `Created account ${account.id}.`,
        formatFields([
          ['name', account.name],
          ['created', account.created_at],
          ...(user ? [['user', `${user.id} (${user.email})`] as const] : []),
          ...(agent ? [['agent', `${agent.agent_id} (simulator: test calls work at once)`] as const] : []),
        ]),
        '',
        `Next: npx callgate keys create --account ${account.id} --name NAME --mode test   (then POST /v1/calls with agent_id ${agent?.agent_id ?? 'agent_...'})`,
        `      npx callgate agents add --account ${account.id} --agent-id agent_... --name NAME   (or agents sync, for real calls)`,
      ].join('\n');
      return { json: account, text };
    };
  },
};
