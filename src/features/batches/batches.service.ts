/**
 * Batches: many calls from one request, dialed by the worker's batch dialer (batch-dialer.job.ts) under
 * the batch's max_concurrency. This service creates, reads, pauses, resumes and cancels them; the HTTP
 * layer, the CLI and the portal call it with parsed input and get values back, or an ApiError in the API's
 * words when the request cannot be met (the CLI and the portal word some of them their own way).
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import type { ApiKeyRow } from '../api-keys/api-keys.tables.js';
import { isoTimestamp, parseIsoDateTime, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import { findAgent } from '../agents/agents.service.js';
import { metadataSizeProblem } from '../calls/calls.service.js';
import { hangUpCallsOfBatch, type CallCancelDeps } from '../calls/call-cancel.service.js';
import { completeKey, type HeldKey, type IdempotencySettings, type StoredResponse } from '../idempotency/idempotency.service.js';
import { finishBatchesIfDone } from './batch-progress.service.js';
import { allQueued, batchesWithCounts, toBatch, toRecipient } from './batch-view.js';
import { checkCallingWindow, nextOpening, windowZones, type CallingWindow } from './calling-window.js';
import { maxConcurrencyDefault, retryDefaults, type Batch, type CreateBatchBody, type Recipient } from './batches.schemas.js';
import type { BatchRow, BatchStatus, RecipientRow, RecipientStatus } from './batches.tables.js';
import * as repo from './batches.repository.js';

export interface BatchesDeps extends CallCancelDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly idempotency: IdempotencySettings;
  /**
   * Wakes the workers after a change they act on (a batch to dial, a `batch.completed` to deliver): the
   * delivery notifier, which the dialer listens to as well (NOTIFY on PostgreSQL reaches every process).
   */
  readonly wakeWorkers?: () => void;
}

/** How far back `scheduled_at` may lie (a clock a little behind), and how far ahead. */
export const scheduleGraceMs = 60_000;
export const scheduleHorizonMs = 30 * 24 * 60 * 60 * 1000;

type Problem = { param: string; message: string };

/** The rules of a batch's body that its JSON schema cannot say; the first fault, in the body's order. */
function bodyProblem(body: CreateBatchBody, now: Date): Problem | { scheduledAt: Date } {
  const firstPlace = new Map<string, number>();
  for (const [index, recipient] of body.recipients.entries()) {
    const place = `recipients[${index}]`;
    const earlier = firstPlace.get(recipient.to);
    if (earlier !== undefined) {
      return {
        param: `${place}.to`,
        message: `${place}.to ${recipient.to} is already in the batch at recipients[${earlier}].to; a number appears at most once in a batch.`,
      };
    }
    firstPlace.set(recipient.to, index);
    const sizeProblem = metadataSizeProblem(recipient.metadata);
    if (sizeProblem) return { param: `${place}.metadata`, message: `${place}.${sizeProblem}` };
  }
  if (body.scheduled_at === undefined) return { scheduledAt: now };
  const at = parseIsoDateTime(body.scheduled_at);
  if (!at) {
    return {
      param: 'scheduled_at',
      message: 'scheduled_at must be an ISO 8601 date and time with its time zone, such as 2026-11-24T09:00:00Z.',
    };
  }
  if (at.getTime() < now.getTime() - scheduleGraceMs) {
    return { param: 'scheduled_at', message: 'scheduled_at is in the past; leave it out to start now.' };
  }
  if (at.getTime() > now.getTime() + scheduleHorizonMs) {
    return { param: 'scheduled_at', message: 'scheduled_at must be at most 30 days ahead.' };
  }
  return { scheduledAt: at };
}

/**
 * Where each recipient's calling window is checked (its zones, as stored) and when it opens first from the
 * batch's start; a number whose zones never share an open hour is refused at its place. Numbers of the same
 * zones share the work: a batch of 10,000 has a few sets of zones.
 */
function placeInWindow(
  window: CallingWindow,
  recipients: CreateBatchBody['recipients'],
  scheduledAt: Date,
): Problem | { zones: string[]; firstAt: string[] } {
  const openingOf = new Map<string, Date | null>();
  const zones: string[] = [];
  const firstAt: string[] = [];
  for (const [index, recipient] of recipients.entries()) {
    const of = windowZones(window, recipient.to);
    const key = JSON.stringify(of);
    if (!openingOf.has(key)) openingOf.set(key, nextOpening(window, of, scheduledAt));
    const opening = openingOf.get(key)!;
    if (!opening) {
      const place = `recipients[${index}].to`;
      return {
        param: place,
        message: `${place} ${recipient.to} is in the time zones ${of.join(', ')}, where calling_window ${window.start}-${window.end} is never open in all at once; call it in a batch of its own zone.`,
      };
    }
    zones.push(key);
    firstAt.push(isoTimestamp(opening));
  }
  return { zones, firstAt };
}

const invalid = (problem: Problem) => new ApiError('invalid_request', problem.message, { param: problem.param });

/**
 * Creates a batch for the key's account, its recipients all queued, and returns its 201, or throws the
 * ApiError that refuses it. The batch, its recipients and the completion of its Idempotency-Key (`key`)
 * are one transaction: the batch appears whole or not at all, and a replay answers this very batch.
 */
export async function createBatch(
  deps: BatchesDeps,
  apiKey: ApiKeyRow,
  body: CreateBatchBody,
  key: HeldKey | null,
): Promise<StoredResponse> {
  const now = deps.clock.now();
  const checked = bodyProblem(body, now);
  if ('param' in checked) throw invalid(checked);
  let window: { settings: CallingWindow; zones: string[]; firstAt: string[] } | undefined;
  if (body.calling_window) {
    const valid = checkCallingWindow(body.calling_window);
    if ('param' in valid) throw invalid(valid);
    const placed = placeInWindow(valid.window, body.recipients, checked.scheduledAt);
    if ('param' in placed) throw invalid(placed);
    window = { settings: valid.window, ...placed };
  }
  const retryOn = body.retry?.on ?? [];
  const repeatedReason = retryOn.find((reason, index) => retryOn.indexOf(reason) !== index);
  if (repeatedReason) throw invalid({ param: 'retry.on', message: `retry.on names ${repeatedReason} twice; name each once.` });
  const agent = await findAgent(deps.db, apiKey.account_id, body.agent_id);
  if (!agent) {
    throw new ApiError('agent_not_found', `No agent ${JSON.stringify(body.agent_id).slice(0, 140)} in this account.`, {
      param: 'agent_id',
    });
  }

  const createdAt = isoTimestamp(now);
  const scheduledAt = isoTimestamp(checked.scheduledAt);
  const row: BatchRow = {
    id: newId('batch', now.getTime()),
    account_id: apiKey.account_id,
    api_key_id: apiKey.id,
    mode: apiKey.mode,
    agent_id: agent.agent_id,
    agent_ref: agent.id,
    name: body.name ?? null,
    status: checked.scheduledAt.getTime() > now.getTime() ? 'scheduled' : 'running',
    scheduled_at: scheduledAt,
    max_concurrency: body.max_concurrency ?? maxConcurrencyDefault,
    calling_window: window ? JSON.stringify(window.settings) : null,
    retry: body.retry ? JSON.stringify({ ...retryDefaults, ...body.retry }) : null,
    total: body.recipients.length,
    created_at: createdAt,
    updated_at: createdAt,
    completed_at: null,
  };
  const recipients = body.recipients.map(
    (recipient, position): RecipientRow => ({
      id: newId('recipient', now.getTime()),
      batch_id: row.id,
      position,
      to_number: recipient.to,
      reference: recipient.reference ?? null,
      metadata: recipient.metadata === undefined ? null : JSON.stringify(recipient.metadata),
      status: 'queued',
      call_id: null,
      call_ids: '[]',
      attempts: 0,
      time_zones: window?.zones[position] ?? null,
      failure_reason: null,
      failure_message: null,
      next_attempt_at: window?.firstAt[position] ?? scheduledAt,
      deferrals: 0,
      locked_until: null,
      created_at: createdAt,
      updated_at: createdAt,
    }),
  );
  const response: StoredResponse = {
    status: 201,
    body: toBatch(row, allQueued(row.total)),
    headers: { location: `/v1/batches/${row.id}` },
  };
  await deps.db.transaction().execute(async (trx) => {
    await repo.insertBatch(trx, row);
    await repo.insertRecipients(trx, recipients);
    if (key) await completeKey(trx, key, response);
  });
  deps.wakeWorkers?.();
  return response;
}

/** A batch, within `scope`: an API key sees its account's batches of its mode only. */
export async function getBatch(db: Db, id: string, scope: repo.BatchScope = {}): Promise<Batch | null> {
  const row = await repo.findBatch(db, id, scope);
  if (!row) return null;
  const [batch] = await batchesWithCounts(db, [row]);
  return batch!;
}

/** The API's 404 for a batch id outside `scope`, naming the key's mode (a test key cannot see live batches). */
function batchNotFound(id: string, scope: repo.BatchScope): ApiError {
  if (id === '') return new ApiError('not_found', 'A batch id is needed: /v1/batches/{id}.');
  const which = scope.mode === undefined ? 'batch' : `${scope.mode}-mode batch`;
  return new ApiError('not_found', `No ${which} ${id.slice(0, 200)} in this account.`);
}

/** A batch within `scope`, or a `not_found`. */
export async function retrieveBatch(db: Db, id: string, scope: repo.BatchScope = {}): Promise<Batch> {
  const batch = await getBatch(db, id, scope);
  if (!batch) throw batchNotFound(id, scope);
  return batch;
}

/** A batch as the operator sees it, across accounts (the CLI): the API's fields, its account and its mode. */
export type OperatorBatch = Batch & { readonly account_id: string; readonly mode: BatchRow['mode'] };

function withOwner(row: BatchRow, batch: Batch): OperatorBatch {
  // The owner's fields right after the id, where a person reading the JSON looks for them.
  const { id, ...rest } = batch;
  return { id, account_id: row.account_id, mode: row.mode, ...rest };
}

/** Any batch, whatever its account and mode, with them. */
export async function getOperatorBatch(db: Db, id: string): Promise<OperatorBatch | null> {
  const row = await repo.findBatch(db, id);
  if (!row) return null;
  const [batch] = await batchesWithCounts(db, [row]);
  return withOwner(row, batch!);
}

/** The newest batches of an account, of both modes, each with its mode (no cursor: the CLI shows one page). */
export async function listOperatorBatches(
  db: Db,
  accountId: string,
  query: { limit: number; status?: BatchStatus },
): Promise<{ data: OperatorBatch[]; has_more: boolean }> {
  const rows = await repo.listBatches(db, {
    accountId,
    limit: query.limit + 1,
    ...(query.status === undefined ? {} : { status: query.status }),
  });
  const shown = rows.slice(0, query.limit);
  const batches = await batchesWithCounts(db, shown);
  return { data: batches.map((batch, index) => withOwner(shown[index]!, batch)), has_more: rows.length > query.limit };
}

/** The mode of each of these batches of the account (the portal shows test and live batches side by side). */
export function batchModes(db: Db, accountId: string, ids: readonly string[]): Promise<Map<string, BatchRow['mode']>> {
  return repo.modesOfBatches(db, accountId, ids);
}

/** A cursor (`starting_after`) that is not among the items listed: 400, so that it cannot probe others. */
function foreignCursor(what: string): ApiError {
  return new ApiError('invalid_request', `starting_after is not ${what}.`, { param: 'starting_after' });
}

/**
 * A page of the account's batches, newest first, as GET /v1/calls pages calls. `startingAfter` must be one
 * of the batches listed (same account and mode), so a cursor cannot probe others.
 */
export async function listBatches(
  db: Db,
  accountId: string,
  query: { limit: number; startingAfter?: string; status?: BatchStatus; mode?: BatchRow['mode'] },
): Promise<{ data: Batch[]; has_more: boolean }> {
  let cursor: BatchRow | undefined;
  if (query.startingAfter !== undefined) {
    cursor = await repo.findBatch(db, query.startingAfter, { accountId, ...(query.mode === undefined ? {} : { mode: query.mode }) });
    if (!cursor) throw foreignCursor('a batch of this account');
  }
  const rows = await repo.listBatches(db, {
    accountId,
    limit: query.limit + 1,
    ...(cursor === undefined ? {} : { startingAfter: { createdAt: cursor.created_at, id: cursor.id } }),
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(query.mode === undefined ? {} : { mode: query.mode }),
  });
  return { data: await batchesWithCounts(db, rows.slice(0, query.limit)), has_more: rows.length > query.limit };
}

/**
 * A page of a batch's recipients in the order sent; `batch` must already be known to be in the caller's
 * scope. `startingAfter` must be a recipient of this batch.
 */
export async function listRecipients(
  db: Db,
  batch: Pick<Batch, 'id' | 'livemode'>,
  query: { limit: number; startingAfter?: string; status?: RecipientStatus },
): Promise<{ data: Recipient[]; has_more: boolean }> {
  const batchId = batch.id;
  let afterPosition: number | undefined;
  if (query.startingAfter !== undefined) {
    const cursor = await repo.findRecipient(db, batchId, query.startingAfter);
    if (!cursor) throw foreignCursor('a recipient of this batch');
    afterPosition = cursor.position;
  }
  const rows = await repo.listRecipients(db, {
    batchId,
    limit: query.limit + 1,
    ...(afterPosition === undefined ? {} : { afterPosition }),
    ...(query.status === undefined ? {} : { status: query.status }),
  });
  return { data: rows.slice(0, query.limit).map((row) => toRecipient(row, batch)), has_more: rows.length > query.limit };
}

/** A page of the recipients of a batch within `scope` (a `not_found` outside it). */
export async function listBatchRecipients(
  db: Db,
  batchId: string,
  scope: repo.BatchScope,
  query: { limit: number; startingAfter?: string; status?: RecipientStatus },
): Promise<{ data: Recipient[]; has_more: boolean }> {
  const batch = await retrieveBatch(db, batchId, scope);
  return listRecipients(db, batch, query);
}

export type BatchAction = 'pause' | 'resume' | 'cancel';

/** Why a batch that ended refuses the action, in the status the API answers (409). */
const refusals: Record<BatchAction, (status: BatchStatus) => ApiError> = {
  pause: (status) => new ApiError('batch_finished', `The batch is ${status}; only a scheduled or running batch can be paused.`),
  resume: (status) => new ApiError('batch_not_resumable', `The batch is ${status}; only a paused batch can be resumed.`),
  cancel: () => new ApiError('batch_finished', 'The batch has completed: every recipient has ended, nothing is left to cancel.'),
};

const finished: readonly BatchStatus[] = ['completed', 'cancelled'];

/**
 * Pauses (no new dials; calls under way go on), resumes, or cancels (every recipient not yet dialed ends
 * `cancelled`, and so does the batch) a batch within `scope`. The same action twice gives the same batch.
 * Pausing or resuming a batch that ended, and cancelling a completed one, is refused (409, nothing changed).
 */
export async function changeBatch(
  deps: BatchesDeps,
  id: string,
  action: BatchAction,
  scope: repo.BatchScope = {},
  options: { readonly hangUp?: boolean } = {},
): Promise<Batch> {
  const { db, clock } = deps;
  let wake = false;
  const result = await db.transaction().execute(async (trx): Promise<Batch> => {
    const found = await repo.findBatch(trx, id, scope);
    if (!found) throw batchNotFound(id, scope);
    // Locked before it is read again: the dialer or a call's end may be changing it at this moment.
    await repo.lockBatches(trx, [found.id]);
    const row = (await repo.findBatch(trx, found.id))!;
    const nowDate = clock.now();
    const now = isoTimestamp(nowDate);
    const show = async (batch: BatchRow) => (await batchesWithCounts(trx, [batch]))[0]!;
    const refusing = action === 'cancel' ? row.status === 'completed' : finished.includes(row.status);
    if (refusing) throw refusals[action](row.status);
    let changed: BatchRow | undefined;
    if (action === 'pause' && (row.status === 'scheduled' || row.status === 'running')) {
      changed = await repo.setBatchStatus(trx, row.id, [row.status], 'paused', now);
    } else if (action === 'resume' && row.status === 'paused') {
      const status = Date.parse(row.scheduled_at) > nowDate.getTime() ? 'scheduled' : 'running';
      changed = await repo.setBatchStatus(trx, row.id, ['paused'], status, now);
      wake = true;
    } else if (action === 'cancel' && row.status !== 'cancelled') {
      await repo.cancelQueuedRecipients(trx, row.id, now);
      await repo.setBatchStatus(trx, row.id, [row.status], 'cancelled', now);
      // With no call under way, the batch has ended now.
      wake = (await finishBatchesIfDone(trx, clock, [row.id])).size > 0;
      changed = await repo.findBatch(trx, row.id);
    }
    return show(changed ?? row);
  });
  if (wake) deps.wakeWorkers?.();
  if (action === 'cancel' && options.hangUp) return hangUp(deps, result);
  return result;
}

/**
 * Ends the calls under way of a batch just cancelled (hang_up): the batch as it is then, or, when a provider
 * could not be asked for some, the 503 that says so (cancelling again with hang_up asks for those only).
 */
async function hangUp(deps: BatchesDeps, batch: Batch): Promise<Batch> {
  const { asked, failed } = await hangUpCallsOfBatch(deps, batch.id);
  if (failed.length > 0) {
    throw new ApiError(
      failed.every((error) => error.code === 'provider_error') ? 'provider_error' : 'provider_unavailable',
      `The batch is cancelled, but ${failed.length} of its ${asked} calls under way could not be ended: ${failed[0]!.message} Cancel again with {"hang_up": true} to ask for those only (the others are ending).`,
      failed.some((error) => error.code === 'provider_unavailable') ? { retryAfterSeconds: 2 } : {},
    );
  }
  const [row] = await batchesWithCounts(deps.db, [(await repo.findBatch(deps.db, batch.id))!]);
  return row ?? batch;
}
