import { ApiError } from '../../../errors/api-error.js';
import { changeBatch } from '../../../features/batches/batches.service.js';
import type { Command } from '../../command.js';
import { formatFields } from '../../output.js';
import { optionalChoiceOption } from '../../args.js';
import { countsLine, requireBatch } from './batch.js';

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;

/**
 * The operator's `POST /v1/batches/{id}/cancel`, through the same service call without an API key's scope:
 * twice gives the same batch, and a completed batch is refused with the API's code.
 */
export const cancelBatchCommand: Command = {
  name: 'cancel',
  summary:
    'Cancel a batch: recipients not yet dialed end cancelled, calls under way go on (or end, with --hang-up true); the same again changes nothing',
  options: {
    'hang-up': {
      value: 'true|false',
      description: 'true: also end the calls under way (cancel them while they ring, hang up answered ones); default false',
    },
  },
  positionals: ['BATCH_ID'],
  prepare(args) {
    const batchId = args.positionals[0] ?? '';
    const hangUp = optionalChoiceOption(args, 'hang-up', ['true', 'false'] as const) === 'true';
    return async ({ config, db, clock, providers, wakeDeliveryWorkers }) => {
      const before = await requireBatch(db, batchId);
      // The service wakes the workers when the batch ended at once (its batch.completed is to be sent);
      // awaited here, since the database closes when the command returns.
      let wake = false;
      const idempotency = { waitMs: config.idempotencyWaitMs, lockMs: config.idempotencyLockMs };
      const deps = { db, clock, idempotency, providers: await providers(), wakeWorkers: () => (wake = true) };
      const cancelled = await changeBatch(deps, before.id, 'cancel', {}, { hangUp }).catch((error: unknown) => {
        // The API's refusals, in the CLI's words (the batch id named, no sentence capitals).
        if (!(error instanceof ApiError)) throw error;
        if (error.code === 'not_found') throw new ApiError('not_found', `no batch with id "${batchId}"`);
        if (error.code !== 'batch_finished') throw error;
        throw new ApiError('batch_finished', `batch ${before.id} has completed: every recipient has ended, nothing is left to cancel`);
      });
      if (wake) await wakeDeliveryWorkers();
      const batch = { ...before, ...cancelled };
      const underWay = batch.counts.dialing + batch.counts.in_progress;
      const what =
        before.status === 'cancelled'
          ? `Batch ${batch.id} (${batch.mode} mode) was cancelled already; nothing changed.`
          : `Cancelled batch ${batch.id} (${batch.mode} mode): ${plural(batch.counts.cancelled - before.counts.cancelled, 'recipient')} not yet dialed ended cancelled.`;
      const ending =
        batch.completed_at === null
          ? hangUp
            ? `${plural(underWay, 'call')} under way; each was asked to end (those of a provider that cannot end calls go on), and batch.completed is sent once they have ended.`
            : `${plural(underWay, 'call')} under way; they go on (--hang-up true ends them), and batch.completed is sent once they have ended.`
          : 'No call is under way: the batch has ended, and its batch.completed event is queued for the endpoints that want it.';
      const text = [
        what,
        formatFields([
          ['status', batch.status],
          ['recipients', countsLine(batch.counts)],
          ['completed', batch.completed_at],
        ]),
        '',
        ending,
      ].join('\n');
      return { json: batch, text };
    };
  },
};
