import { cancelCall } from '../../../features/calls/call-cancel.service.js';
import { requiredOption } from '../../args.js';
import { requireAccount, type Command } from '../../command.js';
import { formatFields } from '../../output.js';

/**
 * The operator's `POST /v1/calls/{id}/cancel`, for a call of either mode of the account: the provider is
 * asked to end it, and the call then ends as usual (its event follows). Twice gives the same answer.
 */
export const cancelCallCommand: Command = {
  name: 'cancel',
  summary: 'Cancel a call: its provider ends it (ringing: cancelled; answered: hung up); its event follows',
  options: {
    account: { value: 'ACCOUNT_ID', description: 'Account of the call (acct_...)', required: true },
  },
  positionals: ['CALL_ID'],
  prepare(args) {
    const accountId = requiredOption(args, 'account');
    const callId = args.positionals[0] ?? '';
    return async ({ db, clock, providers }) => {
      await requireAccount(db, accountId);
      const row = await db
        .selectFrom('calls')
        .select('mode')
        .where('id', '=', callId)
        .where('account_id', '=', accountId)
        .executeTakeFirst();
      const mode = row?.mode ?? 'live';
      const call = await cancelCall({ db, clock, providers: await providers() }, { accountId, mode }, callId);
      const text = [
        `Call ${call.id} (${mode} mode) is ending: its provider agreed at ${call.cancel_requested_at}.`,
        formatFields([
          ['status', call.status],
          ['to', call.to],
          ['agent', call.agent_id],
        ]),
        '',
        'Its call.completed (answered) or call.failed with failure_reason cancelled (not answered) follows once the provider reports the end.',
      ].join('\n');
      return { json: call, text };
    };
  },
};
