import { ApiError } from '../../../errors/api-error.js';
import { removeSuppression } from '../../../features/suppressions/suppressions.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { numberOption } from './number.js';

export const removeSuppressionCommand: Command = {
  name: 'remove',
  summary: "Take a number off an account's suppression list: it may be called again",
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose list it is (acct_...)', required: true },
    to: { value: 'NUMBER', description: 'The number, in E.164 format (+14155550123)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const to = numberOption(args);
    return async ({ db }) => {
      await requireAccount(db, accountId);
      await removeSuppression(db, accountId, to).catch((error: unknown) => {
        // The API's not_found, in the CLI's words (the account named).
        if (!(error instanceof ApiError) || error.code !== 'not_found') throw error;
        throw new ApiError('not_found', `${to} is not on the suppression list of account ${accountId}`, { param: 'to' });
      });
      return {
        json: { to, account_id: accountId, removed: true },
        text: `Removed ${to} from the suppression list of account ${accountId}: it may be called again.`,
      };
    };
  },
};
