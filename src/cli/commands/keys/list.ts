import { listApiKeys } from '../../../features/api-keys/api-keys.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

/** Lists keys by their prefix; `listApiKeys` returns views that hold neither the token nor its hash. */
export const listKeysCommand: Command = {
  name: 'list',
  summary: 'List the API keys of an account (never their tokens)',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose keys are listed (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db }) => {
      await requireAccount(db, accountId);
      const keys = await listApiKeys(db, accountId);
      const text =
        keys.length === 0
          ? `Account ${accountId} has no API keys yet.`
          : formatTable(
              ['id', 'name', 'mode', 'prefix', 'status', 'last used', 'created'],
              keys.map((key) => [key.id, key.name, key.mode, key.prefix, key.status, key.last_used_at, key.created_at]),
            );
      return { json: { data: keys }, text };
    };
  },
};
