import { listSuppressions } from '../../../features/suppressions/suppressions.service.js';
import { listLimitMax } from '../../../http/list-limit.js';
import type { Suppression } from '../../../features/suppressions/suppressions.schemas.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

export const listSuppressionsCommand: Command = {
  name: 'list',
  summary: "List an account's suppression list, newest first",
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose list is shown (acct_...)', required: true },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    return async ({ db }) => {
      await requireAccount(db, accountId);
      // The whole list, read a page at a time: an operator's script wants every number.
      const entries: Suppression[] = [];
      for (let after: string | undefined; ; ) {
        const page = await listSuppressions(db, accountId, {
          limit: listLimitMax,
          ...(after === undefined ? {} : { startingAfter: after }),
        });
        entries.push(...page.data);
        if (!page.has_more) break;
        after = page.data.at(-1)!.id;
      }
      const text =
        entries.length === 0
          ? `The suppression list of account ${accountId} is empty.`
          : formatTable(
              ['number', 'added', 'id', 'reason'],
              entries.map((entry) => [entry.to, entry.created_at, entry.id, entry.reason]),
            );
      return { json: { data: entries }, text };
    };
  },
};
