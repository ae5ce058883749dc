import { addUser } from '../../../features/identity/users.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

export const addUserCommand: Command = {
  name: 'add',
  summary: 'Add a developer-portal user to an account',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account the user belongs to (acct_...)', required: true },
    email: { value: 'EMAIL', description: 'Email the user signs in with (unique across the installation)', required: true },
    password: { value: 'PASSWORD', description: 'Password, at least 10 characters', required: true },
  },
  prepare(args) {
    const input = {
      accountId: requiredOption(args, 'account'),
      email: requiredOption(args, 'email'),
      password: requiredOption(args, 'password'),
    };
    return async ({ config, db, clock }) => {
      await requireAccount(db, input.accountId);
      const user = await addUser(db, clock, input);
      const text = [
        `Added user ${user.email} to account ${user.account_id}.`,
        formatFields([
          ['id', user.id],
          ['created', user.created_at],
        ]),
        '',
        config.publicUrlGiven
          ? `Sign in at ${config.publicUrl}/developers`
          : `Sign in at the server's /developers page (${config.publicUrl}/developers if it runs on the default PORT; give this command CALLGATE_PUBLIC_URL, or PORT, as the server has them and it names the address)`,
      ].join('\n');
      return { json: user, text };
    };
  },
};
