import { listUsers } from '../../../features/identity/users.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

export const listUsersCommand: Command = {
  name: 'list',
  summary: 'List the developer-portal users of an account',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose users are listed (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db }) => {
      await requireAccount(db, accountId);
      const users = await listUsers(db, accountId);
      const text =
        users.length === 0
          ? `Account ${accountId} has no users. Add one with: npx callgate users add --account ${accountId} --email EMAIL --password PASSWORD`
          : formatTable(
              ['id', 'email', 'created'],
              users.map((user) => [user.id, user.email, user.created_at]),
            );
      return { json: { data: users }, text };
    };
  },
};
