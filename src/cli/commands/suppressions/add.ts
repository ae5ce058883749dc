import { addSuppression } from '../../../features/suppressions/suppressions.service.js';
import { reasonMaxLength } from '../../../features/suppressions/suppressions.schemas.js';
import { UsageError, optionalOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';
import { numberOption } from './number.js';

export const addSuppressionCommand: Command = {
  name: 'add',
  summary: "Put a number on an account's suppression list: it is never called (single calls and batches)",
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose list it is (acct_...)', required: true },
    to: { value: 'NUMBER', description: 'The number, in E.164 format (+14155550123)', required: true },
    reason: { value: 'TEXT', description: `Why, for the people of the account (at most ${reasonMaxLength} characters)` },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const to = numberOption(args);
    const reason = optionalOption(args, 'reason')?.trim() || undefined;
    if (reason !== undefined && reason.length > reasonMaxLength) {
      throw new UsageError(`option --reason has ${reason.length} characters; at most ${reasonMaxLength} are allowed`);
    }
    return async ({ db, clock }) => {
      await requireAccount(db, accountId);
      // No Idempotency-Key here: adding a number twice leaves one entry anyway.
      const result = await addSuppression({ db, clock }, accountId, { to, reason });
      const created = result.kind === 'created';
      const fields = formatFields([
        ['reason', result.entry.reason],
        ['added', result.entry.created_at],
      ]);
      const text = created
        ? `Added ${to} to the suppression list of account ${accountId}: it is not called, in test or live mode.\n${fields}`
        : `${to} was already on the suppression list of account ${accountId}; its entry is unchanged.\n${fields}`;
      return { json: { ...result.entry, created }, text };
    };
  },
};
