import { maxConcurrentCallsMax, setMaxConcurrentCalls } from '../../../features/identity/accounts.service.js';
import { optionalOption, UsageError, type CommandArgs } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

/** `--max-concurrent-calls N|none`: a whole number from 1, or `none` (no limit); undefined when absent. */
function maxConcurrentCallsOption(args: CommandArgs): number | null | undefined {
  const value = optionalOption(args, 'max-concurrent-calls')?.trim();
  if (value === undefined) return undefined;
  if (value.toLowerCase() === 'none') return null;
  const number = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(number >= 1 && number <= maxConcurrentCallsMax)) {
    throw new UsageError(
      `option --max-concurrent-calls must be a whole number from 1 to ${maxConcurrentCallsMax}, or none (no limit), got "${value}"`,
    );
  }
  return number;
}

export const updateAccountCommand: Command = {
  name: 'update',
  summary: 'Change an account: its limit of calls in progress at once',
  options: {
    'max-concurrent-calls': {
      value: 'N|none',
      description:
        'Calls in progress at once, live and test each counted apart (1 to 100000); over it POST /v1/calls answers 429 and batches wait. none: no limit',
    },
  },
  positionals: ['ACCOUNT_ID'],
  prepare(args) {
    const accountId = args.positionals[0] ?? '';
    const limit = maxConcurrentCallsOption(args);
    if (limit === undefined) throw new UsageError('nothing to change: give --max-concurrent-calls N (or none)');
    return async ({ db }) => {
      // No such account: requireAccount's not_found, which names the likely cause.
      const account = (await setMaxConcurrentCalls(db, accountId, limit)) ?? (await requireAccount(db, accountId));
      const text = [
        `Updated account ${account.id}.`,
        formatFields([
          ['name', account.name],
          [
            'max concurrent calls',
            account.max_concurrent_calls === null
              ? 'no limit'
              : `${account.max_concurrent_calls} (live and test calls each; POST /v1/calls over it gets 429, batches wait)`,
          ],
        ]),
      ].join('\n');
      return { json: account, text };
    };
  },
};
