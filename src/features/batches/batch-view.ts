/** Rows of batches and recipients as the API, the events and the portal show them. */
import type { Db } from '../../db/database.js';
import type { Batch, BatchCounts, Recipient } from './batches.schemas.js';
import type { BatchRow, RecipientRow, RecipientStatus } from './batches.tables.js';
import * as repo from './batches.repository.js';

/** Counts of a batch none of whose recipients has left `queued` (a new batch). */
export function allQueued(total: number): BatchCounts {
  return { total, queued: total, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 0 };
}

/** Counts from the number of recipients in each state; they add up to `total` by construction. */
export function countsFrom(total: number, byStatus: ReadonlyMap<RecipientStatus, number> | undefined): BatchCounts {
  const of = (status: RecipientStatus) => byStatus?.get(status) ?? 0;
  return {
    total,
    queued: of('queued'),
    dialing: of('dialing'),
    in_progress: of('in_progress'),
    completed: of('completed'),
    failed: of('failed'),
    cancelled: of('cancelled'),
  };
}

export function toBatch(row: BatchRow, counts: BatchCounts): Batch {
  return {
    id: row.id,
    agent_id: row.agent_id,
    name: row.name,
    status: row.status,
    scheduled_at: row.scheduled_at,
    max_concurrency: row.max_concurrency,
    counts,
    calling_window: row.calling_window === null ? null : (JSON.parse(row.calling_window) as Batch['calling_window']),
    retry: row.retry === null ? null : (JSON.parse(row.retry) as Batch['retry']),
    created_at: row.created_at,
    completed_at: row.completed_at,
    livemode: row.mode === 'live',
  };
}

/** Batches with their counts, read in one statement for all of them (`db` may be a transaction). */
export async function batchesWithCounts(db: Db, rows: readonly BatchRow[]): Promise<Batch[]> {
  if (rows.length === 0) return [];
  const counts = await repo.countsByBatch(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => toBatch(row, countsFrom(row.total, counts.get(row.id))));
}

/**
 * A recipient as every representation shows it (API, CLI's --json, portal), its fields in the order of the
 * schema: the row's failure columns hold the latest failed call's, kept while a retry waits. A recipient has
 * its batch's mode (`livemode`), which its row does not repeat.
 */
export function toRecipient(row: RecipientRow, batch: Pick<Batch, 'livemode'>): Recipient {
  const failed = row.status === 'failed';
  return {
    id: row.id,
    to: row.to_number,
    reference: row.reference,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Recipient['metadata']),
    status: row.status,
    ...(row.call_id === null ? {} : { call_id: row.call_id }),
    call_ids: JSON.parse(row.call_ids) as string[],
    attempts: row.attempts,
    last_failure_reason: failed ? (row.failure_reason ?? 'unknown') : row.failure_reason,
    last_failure_message: row.failure_message,
    next_attempt_at: row.status === 'queued' ? row.next_attempt_at : null,
    ...(failed ? { failure_reason: row.failure_reason ?? 'unknown', failure_message: row.failure_message } : {}),
    updated_at: row.updated_at,
    livemode: batch.livemode,
  };
}
