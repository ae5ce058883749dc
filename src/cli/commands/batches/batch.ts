import type { Db } from '../../../db/database.js';
import { ApiError } from '../../../errors/api-error.js';
import type { BatchCounts } from '../../../features/batches/batches.schemas.js';
import { getOperatorBatch, type OperatorBatch } from '../../../features/batches/batches.service.js';

/** The batch named on the command line, in any account and mode, or a `not_found` naming the id. */
export async function requireBatch(db: Db, batchId: string): Promise<OperatorBatch> {
  const batch = await getOperatorBatch(db, batchId);
  if (!batch) throw new ApiError('not_found', `no batch with id "${batchId}"`);
  return batch;
}

/** `25 in all: 20 queued, 2 dialing, …`: every state, zeros too, so that the numbers visibly add up. */
export function countsLine(counts: BatchCounts): string {
  return [
    `${counts.total} in all: ${counts.queued} queued`,
    `${counts.dialing} dialing`,
    `${counts.in_progress} in progress`,
    `${counts.completed} completed`,
    `${counts.failed} failed`,
    `${counts.cancelled} cancelled`,
  ].join(', ');
}
