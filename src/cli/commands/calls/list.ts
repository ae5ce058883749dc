import { listCalls } from '../../../features/calls/calls.service.js';
import { listLimitMax } from '../../../http/list-limit.js';
import type { CallStatus } from '../../../features/calls/calls.tables.js';
import { integerOption, optionalChoiceOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

const callStatuses: readonly CallStatus[] = ['initiated', 'completed', 'failed'];
const defaultLimit = 20;

export const listCallsCommand: Command = {
  name: 'list',
  summary: 'List the calls of an account (test and live), newest first',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose calls are listed (acct_...)', required: true },
    status: { value: callStatuses.join('|'), description: 'Only calls in this state' },
    limit: { value: 'N', description: `At most N calls, 1 to ${listLimitMax} (default ${defaultLimit})` },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const status = optionalChoiceOption(args, 'status', callStatuses);
    const limit = integerOption(args, 'limit', { min: 1, max: listLimitMax, fallback: defaultLimit });
    return async ({ db }) => {
      await requireAccount(db, accountId);
      // No cursor: listCalls returns null only for an unknown cursor.
      const page = (await listCalls(db, accountId, { limit, ...(status === undefined ? {} : { status }) })) ?? {
        data: [],
        has_more: false,
      };
      if (page.data.length === 0) {
        return { json: page, text: `Account ${accountId} has ${status === undefined ? 'no calls' : `no ${status} calls`}.` };
      }
      const table = formatTable(
        ['id', 'status', 'agent', 'to', 'created', 'ended or failed'],
        page.data.map((call) => [call.id, call.status, call.agent_id, call.to, call.created_at, call.ended_at ?? call.failed_at ?? null]),
      );
      const more = page.has_more
        ? `\n\nThe ${page.data.length} newest are shown; there are more (--limit up to ${listLimitMax}, or the portal's Calls page).`
        : '';
      return { json: page, text: `${table}${more}` };
    };
  },
};
