import { listAccounts } from '../../../features/identity/accounts.service.js';
import type { Command } from '../../command.js';
import { formatTable } from '../../output.js';

/** Finds an account id again once the start banner has scrolled away. */
export const listAccountsCommand: Command = {
  name: 'list',
  summary: 'List the accounts of this installation with their ids',
  options: {},
  prepare() {
    return async ({ db }) => {
      const accounts = await listAccounts(db);
      const text =
        accounts.length === 0
          ? 'No accounts yet. Create one with: npx callgate accounts create --name NAME'
          : formatTable(
              ['id', 'name', 'users', 'max concurrent calls', 'created'],
              accounts.map((account) => [
                account.id,
                account.name,
                String(account.users),
                account.max_concurrent_calls === null ? 'no limit' : String(account.max_concurrent_calls),
                account.created_at,
              ]),
            );
      return { json: { data: accounts }, text };
    };
  },
};
