import { listOperatorBatches } from '../../../features/batches/batches.service.js';
import { batchStatuses } from '../../../features/batches/batches.tables.js';
import { integerOption, optionalChoiceOption, requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatTable } from '../../output.js';

const defaultLimit = 20;
const maxLimit = 100;

export const listBatchesCommand: Command = {
  name: 'list',
  summary: 'List the batches of an account (test and live), newest first, with their recipients by state',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account whose batches are listed (acct_...)', required: true },
    status: { value: batchStatuses.join('|'), description: 'Only batches in this state' },
    limit: { value: 'N', description: `At most N batches, 1 to ${maxLimit} (default ${defaultLimit})` },
  },
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const status = optionalChoiceOption(args, 'status', batchStatuses);
    const limit = integerOption(args, 'limit', { min: 1, max: maxLimit, fallback: defaultLimit });
    return async ({ db }) => {
      await requireAccount(db, accountId);
      const page = await listOperatorBatches(db, accountId, { limit, ...(status === undefined ? {} : { status }) });
      if (page.data.length === 0) {
        const which = status === undefined ? 'no batches' : `no ${status} batches`;
        return { json: page, text: `Account ${accountId} has ${which}.` };
      }
      const table = formatTable(
        [
          'id',
          'mode',
          'status',
          'name',
          'total',
          'queued',
          'dialing',
          'in progress',
          'completed',
          'failed',
          'cancelled',
          'scheduled at',
          'created',
        ],
        page.data.map((batch) => [
          batch.id,
          batch.mode,
          batch.status,
          batch.name,
          String(batch.counts.total),
          String(batch.counts.queued),
          String(batch.counts.dialing),
          String(batch.counts.in_progress),
          String(batch.counts.completed),
          String(batch.counts.failed),
          String(batch.counts.cancelled),
          batch.scheduled_at,
          batch.created_at,
        ]),
      );
      const newest = page.data.length === 1 ? 'Only the newest is shown' : `The ${page.data.length} newest are shown`;
      const more = page.has_more ? `\n\n${newest}; there are more (--limit up to ${maxLimit}, or the portal's Batches page).` : '';
      return { json: page, text: `${table}${more}` };
    };
  },
};
