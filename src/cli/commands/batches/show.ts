import { listRecipients } from '../../../features/batches/batches.service.js';
import type { Recipient } from '../../../features/batches/batches.schemas.js';
import { callingWindowInWords, retryInWords } from '../../../features/batches/batch-words.js';
import { integerOption } from '../../args.js';
import type { Command } from '../../command.js';
import { formatFields, formatTable } from '../../output.js';
import { countsLine, requireBatch } from './batch.js';

const defaultLimit = 20;
const maxLimit = 100;

/**
 * Why its latest call failed: the reason, and the provider's or callgate's words when there are some. A
 * queued recipient shows it too: that is why it waits for a retry.
 */
function failureOf(recipient: Recipient): string | null {
  if (recipient.last_failure_reason === null) return null;
  return recipient.last_failure_message
    ? `${recipient.last_failure_reason}: ${recipient.last_failure_message}`
    : recipient.last_failure_reason;
}

export const showBatchCommand: Command = {
  name: 'show',
  summary: 'Show a batch (any account, test or live) with its recipients by state and the first recipients',
  options: {
    limit: { value: 'N', description: `Recipients shown, in the order sent, 1 to ${maxLimit} (default ${defaultLimit})` },
  },
  positionals: ['BATCH_ID'],
  prepare(args) {
    const batchId = args.positionals[0] ?? '';
    const limit = integerOption(args, 'limit', { min: 1, max: maxLimit, fallback: defaultLimit });
    return async ({ db }) => {
      const batch = await requireBatch(db, batchId);
      const recipients = await listRecipients(db, batch, { limit });
      const shown = recipients.data.length;
      const total = batch.counts.total;
      const heading =
        shown === total
          ? `${total === 1 ? 'Its recipient' : `All ${total} recipients`}, in the order sent:`
          : `The first ${shown} of ${total} recipients, in the order sent:`;
      const text = [
        `Batch ${batch.id} (${batch.mode} mode) of account ${batch.account_id}`,
        formatFields([
          ['name', batch.name],
          ['status', batch.status],
          ['agent', batch.agent_id],
          ['max concurrency', String(batch.max_concurrency)],
          ['scheduled at', batch.scheduled_at],
          ['calling window', callingWindowInWords(batch.calling_window)],
          ['retries', retryInWords(batch.retry)],
          ['created', batch.created_at],
          ['completed', batch.completed_at],
          ['recipients', countsLine(batch.counts)],
        ]),
        '',
        heading,
        formatTable(
          ['#', 'id', 'to', 'reference', 'status', 'attempts', 'next attempt', 'call', 'last failure', 'updated'],
          recipients.data.map((recipient, index) => [
            String(index + 1),
            recipient.id,
            recipient.to,
            recipient.reference,
            recipient.status,
            String(recipient.attempts),
            recipient.next_attempt_at,
            recipient.call_id ?? null,
            failureOf(recipient),
            recipient.updated_at,
          ]),
        ),
        ...(recipients.has_more
          ? ['', `The others: --limit up to ${maxLimit}, GET /v1/batches/${batch.id}/recipients, or the portal's batch page.`]
          : []),
      ].join('\n');
      return { json: { ...batch, recipients }, text };
    };
  },
};
