/**
 * Placing calls and recording how they ended. The HTTP layer hands in a parsed request and gets back the
 * call, or an ApiError thrown; it never sees the database or the provider.
 */
import type { Db } from '../../db/database.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { callIdOf } from '../../lib/ids.js';
import { slotLength, type SlotUnit } from '../../lib/time-slots.js';
import type { AgentRow } from '../agents/agents.tables.js';
import { ApiError } from '../../errors/api-error.js';
import { findAgent } from '../agents/agents.service.js';
import type { ApiKeyRow } from '../api-keys/api-keys.tables.js';
import type { HeldKey, IdempotencySettings, StoredResponse } from '../idempotency/idempotency.service.js';
import { providerFailureError } from '../providers/provider-failure.js';
import type { CallOutcome } from '../providers/provider.interface.js';
import { endRecipientsOfCalls, finishEndedBatches } from '../batches/batch-progress.service.js';
import { concurrencyLimitOf, holdCallSlot, releaseSlots } from '../concurrency/concurrency.service.js';
import { isSuppressed } from '../suppressions/suppressions.service.js';
import { enqueueEvents } from '../webhook-delivery/fan-out.service.js';
import * as repo from './calls.repository.js';
import * as dialsRepo from './dials.repository.js';
import * as contentRepo from './call-content.repository.js';
import { callOutcomeEvent } from './call-events.js';
import { analysisOf } from './call-analysis.js';
import { noOutcome } from './call-row.js';
import { dial, type DialDeps } from './dial-driver.js';
import { outcomeToJson } from './dials.service.js';
import { createdResponse, lostAnswer, requestOrigin } from './request-origin.js';
import { metadataMaxBytes, type Call, type CreateCallBody } from './calls.schemas.js';
import type { CallRow } from './calls.tables.js';

/** What placing calls needs: the dial driver's (database, clock, providers, dial settings, wake-ups) and the Idempotency-Key settings. */
export interface CallsDeps extends DialDeps {
  readonly idempotency: IdempotencySettings;
}

/** Rules of spec 2.1 that a JSON schema cannot say: the 5 KB size of the metadata. */
export function metadataSizeProblem(metadata: CreateCallBody['metadata']): string | null {
  if (metadata === undefined) return null;
  const bytes = Buffer.byteLength(JSON.stringify(metadata), 'utf8');
  return bytes > metadataMaxBytes ? `metadata is ${bytes} bytes of JSON; at most ${metadataMaxBytes} are allowed.` : null;
}

/** A call as the API shows it, with its outcome once it has one. */
export function toCall(row: CallRow): Call {
  const call: Call = {
    id: row.id,
    agent_id: row.agent_id,
    to: row.to_number,
    status: row.status,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Call['metadata']),
    created_at: row.created_at,
    livemode: row.mode === 'live',
  };
  if (row.status === 'completed') {
    call.duration_seconds = row.duration_seconds ?? 0;
    call.transcript_summary = row.transcript_summary ?? '';
    if (row.started_at) call.started_at = row.started_at;
    if (row.ended_at) call.ended_at = row.ended_at;
  } else if (row.status === 'failed') {
    call.failure_reason = row.failure_reason ?? 'unknown';
    call.failure_message = row.failure_message;
    if (row.failed_at) call.failed_at = row.failed_at;
  }
  if (row.status !== 'initiated') call.analysis = analysisOf(row);
  if (row.batch_id !== null) {
    call.batch_id = row.batch_id;
    call.reference = row.reference;
  }
  if (row.found_after_lost_answer) call.found_after_lost_answer = true;
  if (row.cancel_requested_at !== null) call.cancel_requested_at = row.cancel_requested_at;
  return call;
}

/**
 * Starts a call for the key's account and returns its 201, or throws the ApiError that refuses it. With an
 * Idempotency-Key (`key`, held by idempotency.plugin.ts), one logical request places at most one call: the
 * call is stored in one transaction with the completion of its key, so that duplicates replay this success.
 */
export async function createCall(deps: CallsDeps, apiKey: ApiKeyRow, body: CreateCallBody, key: HeldKey | null): Promise<StoredResponse> {
  const sizeProblem = metadataSizeProblem(body.metadata);
  if (sizeProblem) throw new ApiError('invalid_request', sizeProblem, { param: 'metadata' });

  // Read at once: each is a round trip on PostgreSQL. The suppression list guards every mode, so a test-mode
  // key's entry holds for live calls too. PostgreSQL text cannot hold U+0000, and no agent id contains it.
  const [agent, suppressed, limit] = await Promise.all([
    hasNul(body.agent_id) ? undefined : findAgent(deps.db, apiKey.account_id, body.agent_id),
    isSuppressed(deps.db, apiKey.account_id, body.to),
    concurrencyLimitOf(deps.db, apiKey.account_id),
  ]);
  if (!agent) {
    throw new ApiError('agent_not_found', `No agent ${JSON.stringify(body.agent_id).slice(0, 140)} in this account.`, {
      param: 'agent_id',
    });
  }
  if (suppressed) {
    throw new ApiError(
      'number_suppressed',
      `${body.to} is on this account's suppression list, so it is not called. Do not retry; if the person asked to be called again, remove it first (DELETE /v1/suppressions/${encodeURIComponent(body.to)}).`,
      { param: 'to' },
    );
  }

  // The account's limit of calls at once (a 429 when reached): a slot is taken before the provider is asked, for as long as the
  // key is locked at most, and dropped once the call is stored (which holds the place until its outcome)
  // or was refused. After a crash in between, the slot frees itself with that lease. (A call whose store
  // waits for the database counts again only once stored.)
  const slot = await holdCallSlot(deps.db, deps.clock, {
    accountId: apiKey.account_id,
    mode: apiKey.mode,
    leaseMs: deps.idempotency.lockMs,
    unlockedLimit: limit,
  });
  if (slot.kind === 'unlimited') return dialForRequest(deps, apiKey, body, key, agent);
  return dialForRequest(deps, apiKey, body, key, agent).finally(() => releaseSlots(deps.db, [slot.id]));
}

/**
 * Dials for the request (dial-driver.ts), holding its key, and answers how that went: the 201 of the call,
 * or the ApiError of a refusal, a lost answer (the key held until its dial is known) or a placed call whose
 * store waits for the database.
 */
async function dialForRequest(
  deps: CallsDeps,
  apiKey: ApiKeyRow,
  body: CreateCallBody,
  key: HeldKey | null,
  agent: AgentRow,
): Promise<StoredResponse> {
  const attempt = await dial(deps, requestOrigin(deps.clock, apiKey, key), agent, { to: body.to, metadata: body.metadata ?? null });
  switch (attempt.kind) {
    case 'placed':
      return createdResponse(attempt.call);
    case 'refused':
      throw providerFailureError(attempt.failure);
    case 'lost': {
      const answer = lostAnswer(attempt.dial, attempt.failure, key !== null);
      throw new ApiError(answer.code, answer.message, { retryAfterSeconds: answer.retryAfterSeconds });
    }
    case 'storing': {
      const { id } = attempt.call;
      throw new ApiError(
        'database_unavailable',
        key === null
          ? `The call ${id} was placed, but the database is unavailable for a moment; it is stored as soon as it is back. Do not retry without an Idempotency-Key: that would place a second call. Look for the call with GET /v1/calls/${id}.`
          : `The call ${id} was placed, but the database is unavailable for a moment; it is stored as soon as it is back. Retry with backoff and the same Idempotency-Key to get its 201 (never a second call).`,
        { cause: attempt.error, retryAfterSeconds: 2 },
      );
    }
  }
}

/** True for text that PostgreSQL refuses as a query parameter; such a value names nothing we store. */
function hasNul(text: string): boolean {
  return text.includes('\u0000');
}

/**
 * A page of the account's calls, newest first; with `mode`, only those made in that mode, as an API key
 * sees them (Stripe's test and live data never mix). `startingAfter` must be one of those calls, so a
 * cursor can't be used to probe other accounts; returns null when it is not.
 */
export async function listCalls(db: Db, accountId: string, query: CallPageQuery): Promise<{ data: Call[]; has_more: boolean } | null> {
  const page = await pageOfCalls(db, accountId, query);
  return page && { data: page.rows.map(toCall), has_more: page.hasMore };
}

/**
 * GET /v1/calls: a page of the key's calls of its mode, newest first, filtered by any of the query's filters
 * at once. An empty agent_id, batch_id or reference, or a starting_after that is no call of the account in
 * this mode, is a 400 naming the parameter.
 */
export async function listCallsOfKey(
  db: Db,
  apiKey: Pick<ApiKeyRow, 'account_id' | 'mode'>,
  query: Omit<CallPageQuery, 'mode'>,
): Promise<{ data: Call[]; has_more: boolean }> {
  // An empty filter is a mistake, not "no filter" (Stripe refuses empty strings the same way).
  if (query.agentId === '') {
    throw new ApiError('invalid_request', "agent_id must not be empty; leave it out to list every agent's calls.", { param: 'agent_id' });
  }
  if (query.batchId === '') {
    throw new ApiError('invalid_request', 'batch_id must not be empty; leave it out to list calls of every batch and none.', {
      param: 'batch_id',
    });
  }
  if (query.reference === '') {
    throw new ApiError('invalid_request', 'reference must not be empty; leave it out to list calls of every reference and none.', {
      param: 'reference',
    });
  }
  const page = await listCalls(db, apiKey.account_id, { ...query, mode: apiKey.mode });
  if (!page)
    throw new ApiError(
      'invalid_request',
      `starting_after is not a ${apiKey.mode}-mode call of this account: pass the id of the last call of the page before, listed with this key.`,
      { param: 'starting_after' },
    );
  return page;
}

/** A call with the mode it was made in: the portal shows both modes, and says which each call is. */
export type CallWithMode = Call & { readonly mode: CallRow['mode'] };

function toCallWithMode(row: CallRow): CallWithMode {
  return { ...toCall(row), mode: row.mode };
}

/** `listCalls` for the portal: each call with its mode. */
export async function listCallsWithMode(
  db: Db,
  accountId: string,
  query: CallPageQuery,
): Promise<{ data: CallWithMode[]; has_more: boolean } | null> {
  const page = await pageOfCalls(db, accountId, query);
  return page && { data: page.rows.map(toCallWithMode), has_more: page.hasMore };
}

export interface CallPageQuery {
  limit: number;
  startingAfter?: string;
  status?: CallRow['status'];
  agentId?: string;
  /** A number in E.164 form (the caller checked it). */
  to?: string;
  batchId?: string;
  reference?: string;
  /** Exclusive bounds on the creation time. */
  createdAfter?: Date;
  createdBefore?: Date;
  mode?: CallRow['mode'];
}

/** The filters of a page that no stored call can match: text with a NUL, which PostgreSQL refuses as a parameter. */
function matchesNothing(query: CallPageQuery): boolean {
  return [query.agentId, query.batchId, query.reference].some((text) => text !== undefined && hasNul(text));
}

async function pageOfCalls(db: Db, accountId: string, query: CallPageQuery): Promise<{ rows: CallRow[]; hasMore: boolean } | null> {
  let cursor: CallRow | undefined;
  if (query.startingAfter !== undefined) {
    cursor = hasNul(query.startingAfter) ? undefined : await repo.findCallInAccount(db, accountId, query.startingAfter, query.mode);
    if (!cursor) return null;
  }
  if (matchesNothing(query)) return { rows: [], hasMore: false };
  const rows = await repo.listCalls(db, {
    accountId,
    limit: query.limit + 1,
    ...(cursor === undefined ? {} : { startingAfter: { createdAt: cursor.created_at, id: cursor.id } }),
    ...(query.status === undefined ? {} : { status: query.status }),
    ...(query.agentId === undefined ? {} : { agentId: query.agentId }),
    ...(query.to === undefined ? {} : { to: query.to }),
    ...(query.batchId === undefined ? {} : { batchId: query.batchId }),
    ...(query.reference === undefined ? {} : { reference: query.reference }),
    ...(query.createdAfter === undefined ? {} : { createdAfter: isoTimestamp(query.createdAfter) }),
    ...(query.createdBefore === undefined ? {} : { createdBefore: isoTimestamp(query.createdBefore) }),
    ...(query.mode === undefined ? {} : { mode: query.mode }),
  });
  return { rows: rows.slice(0, query.limit), hasMore: rows.length > query.limit };
}

/** A call of the account; with `mode`, only one made in that mode (an API key's). */
export async function getCall(db: Db, accountId: string, id: string, mode?: CallRow['mode']): Promise<Call | null> {
  if (hasNul(id)) return null;
  const row = await repo.findCallInAccount(db, accountId, id, mode);
  return row ? toCall(row) : null;
}

/** GET /v1/calls/{id}: the key's call of its mode, or the 404 that says what was looked for. */
export async function retrieveCall(db: Db, apiKey: Pick<ApiKeyRow, 'account_id' | 'mode'>, id: string): Promise<Call> {
  const call = await getCall(db, apiKey.account_id, id, apiKey.mode);
  if (call) return call;
  throw new ApiError(
    'not_found',
    id === '' ? 'A call id is needed: GET /v1/calls/{id}.' : `No ${apiKey.mode}-mode call ${id} in this account.`,
  );
}

/** A call of the account, of either mode, with its mode (the portal's call page). */
export async function getCallWithMode(db: Db, accountId: string, id: string): Promise<CallWithMode | null> {
  if (hasNul(id)) return null;
  const row = await repo.findCallInAccount(db, accountId, id);
  return row ? toCallWithMode(row) : null;
}

/** A call of any account: for a provider's webhook, which names the call but no account. */
export async function findCallById(db: Db, id: string): Promise<CallRow | undefined> {
  return repo.findCallById(db, id);
}

/** A provider's report of how one of its calls ended (a post-call webhook), by the provider's id of the call. */
export interface ReportedOutcome {
  readonly provider: CallRow['provider'];
  readonly conversationId: string;
  /** callgate's dial id, when the report carries it (ElevenLabs: the conversation's user_id). */
  readonly dialId: string | null;
  readonly outcome: CallOutcome;
}

/**
 * Records a provider's report of a call's end. A report of a call not stored yet (its create answer was
 * lost, or its store is still under way) is held, never dropped: the dial job records it once the call is
 * stored, and a report that names its dial makes that dial's search look at once. `held` then.
 */
export async function recordReportedOutcome(
  db: Db,
  clock: Clock,
  report: ReportedOutcome,
  onEnded?: (call: CallRow) => void,
): Promise<{ readonly handling: 'recorded' | 'duplicate' | 'held'; readonly call?: CallRow; readonly deliveries: number }> {
  const call = await repo.findCallById(db, callIdOf(report.conversationId));
  if (call && call.provider === report.provider) {
    const recorded = await recordOutcome(db, clock, call.id, report.outcome, onEnded);
    return { handling: recorded.ended ? 'recorded' : 'duplicate', call, deliveries: recorded.deliveries };
  }
  const now = isoTimestamp(clock.now());
  await dialsRepo.holdOutcome(db, {
    provider: report.provider,
    conversation_id: report.conversationId,
    dial_id: report.dialId,
    outcome: outcomeToJson(report.outcome),
    received_at: now,
  });
  if (report.dialId !== null) await dialsRepo.lookNow(db, report.dialId, now);
  return { handling: 'held', deliveries: 0 };
}

/**
 * Has the call monitor look at a call that has not ended at `at` (a provider said it ended, and the rest of
 * its outcome should follow by then; if it does not, the monitor asks for it). Nothing for an ended call.
 */
export async function scheduleCheck(db: Db, callId: string, at: Date): Promise<void> {
  await repo.setNextCheck(db, callId, isoTimestamp(at));
}

/**
 * Records how a call ended, once, and in the same transaction writes its `call.completed` / `call.failed`
 * event with a delivery per subscribed endpoint (the outbox); a batch's call also ends its recipient there,
 * and may finish its batch once that has committed. A second report for the same call changes nothing (`ended` false). Callers
 * wake the webhook dispatcher when `deliveries` is more than zero. `onEnded` hears each call ended, once
 * committed (the metrics).
 */
export async function recordOutcome(
  db: Db,
  clock: Clock,
  callId: string,
  outcome: CallOutcome,
  onEnded?: (call: CallRow) => void,
): Promise<{ ended: boolean; deliveries: number }> {
  const [result] = await recordOutcomes(db, clock, [{ callId, outcome }], onEnded);
  return result!;
}

/**
 * `recordOutcome` for several calls in one transaction and a fixed number of statements (the calls, their
 * events, the endpoints, the deliveries): the call monitor ends calls in batches, and a commit or a round
 * trip per call cost more than the work. All or nothing: if it throws, none is recorded. Results are in
 * the order of `outcomes`.
 */
export async function recordOutcomes(
  db: Db,
  clock: Clock,
  outcomes: readonly { readonly callId: string; readonly outcome: CallOutcome }[],
  onEnded?: (call: CallRow) => void,
): Promise<{ ended: boolean; deliveries: number }[]> {
  if (outcomes.length === 0) return [];
  const updatedAt = isoTimestamp(clock.now());
  // A call listed twice ends with its first outcome: the statement below would pick one at random.
  const first = new Map<string, CallOutcome>();
  for (const { callId, outcome } of outcomes) if (!first.has(callId)) first.set(callId, outcome);
  const endings = [...first].map(([callId, outcome]) => callEnding(callId, outcome, updatedAt));
  let endedCalls: CallRow[] = [];
  let batchIds: readonly string[] = [];
  const results = await db.transaction().execute(async (trx) => {
    const ended = new Map((await repo.finishCalls(trx, endings)).map((call) => [call.id, call]));
    endedCalls = [...ended.values()];
    const withEvents = [...ended.values()].flatMap((call) => {
      const event = callOutcomeEvent(call);
      return event ? [{ call, event }] : [];
    });
    const written = await enqueueEvents(
      trx,
      clock,
      withEvents.map(({ call, event }) => ({
        accountId: call.account_id,
        mode: call.mode,
        type: event.type,
        callId: call.id,
        data: event.data,
      })),
    );
    const deliveries = new Map(withEvents.map(({ call }, index) => [call.id, written[index]!.deliveryIds.length]));
    const refused = new Set(
      [...first].filter(([, outcome]) => outcome.status === 'failed' && outcome.concurrencyRefused).map(([id]) => id),
    );
    batchIds = await endRecipientsOfCalls(trx, clock, [...ended.values()], refused);
    await contentRepo.insertContents(
      trx,
      [...ended.keys()].map((callId) => contentRow(callId, first.get(callId)!, updatedAt)),
    );
    const reported = new Set<string>();
    return outcomes.map(({ callId }) => {
      const call = ended.get(callId);
      if (!call || reported.has(callId)) return { ended: false, deliveries: 0 };
      reported.add(callId);
      return { ended: true, deliveries: deliveries.get(callId) ?? 0 };
    });
  });
  // Their batches finish once the recipients' ends are committed (see finishEndedBatches); a batch's
  // `batch.completed` deliveries count with the first of its calls that ended here.
  const finished = new Map(await finishEndedBatches(db, clock, batchIds));
  const batchOf = new Map(endedCalls.map((call) => [call.id, call.batch_id]));
  outcomes.forEach(({ callId }, index) => {
    const batchId = results[index]!.ended ? batchOf.get(callId) : null;
    if (!batchId || !finished.has(batchId)) return;
    results[index] = { ended: true, deliveries: results[index]!.deliveries + finished.get(batchId)! };
    finished.delete(batchId);
  });
  if (onEnded) for (const call of endedCalls) onEnded(call);
  // A report for a call that had ended already may bring what its end lacked (Retell's analysis after the
  // look-up ended the call): merged, with no second event.
  const merged = new Set<string>();
  for (const [index, { callId, outcome }] of outcomes.entries()) {
    if (results[index]!.ended || merged.has(callId)) continue;
    merged.add(callId);
    const late = lateContent(callId, outcome);
    if (late) await contentRepo.mergeLateContent(db, late);
  }
  return results;
}

/** The content row of a call that has just ended: whatever its provider kept, stored even when that is nothing. */
function contentRow(callId: string, outcome: CallOutcome, storedAt: string): contentRepo.CallContentRow {
  return {
    call_id: callId,
    stored_at: storedAt,
    turns: outcome.content?.turns ? JSON.stringify(outcome.content.turns) : null,
    recording: outcome.content?.recording ? JSON.stringify(outcome.content.recording) : null,
  };
}

/** What a report for an ended call may still add, or null when it has nothing to add. */
function lateContent(callId: string, outcome: CallOutcome): contentRepo.LateContent | null {
  const { content } = outcome;
  const summary = outcome.status === 'completed' && outcome.transcriptSummary !== '' ? outcome.transcriptSummary : null;
  if (!content && summary === null) return null;
  const analysis = content?.analysis ?? null;
  return {
    callId,
    successful: analysis?.successful == null ? null : analysis.successful ? 1 : 0,
    data: analysis !== null && Object.keys(analysis.data).length > 0 ? JSON.stringify(analysis.data) : null,
    summary,
    turns: content?.turns && content.turns.length > 0 ? JSON.stringify(content.turns) : null,
    recording: content?.recording ? JSON.stringify(content.recording) : null,
  };
}

function callEnding(callId: string, outcome: CallOutcome, updatedAt: string): repo.CallEnding {
  const analysis = outcome.content?.analysis ?? null;
  const judged = {
    analysis_successful: analysis?.successful == null ? null : analysis.successful ? 1 : 0,
    analysis_data: JSON.stringify(analysis?.data ?? {}),
  };
  return outcome.status === 'completed'
    ? {
        ...noOutcome,
        ...judged,
        id: callId,
        status: 'completed',
        updated_at: updatedAt,
        started_at: isoTimestamp(outcome.startedAt),
        ended_at: isoTimestamp(outcome.endedAt),
        duration_seconds: outcome.durationSeconds,
        transcript_summary: outcome.transcriptSummary,
      }
    : {
        ...noOutcome,
        ...judged,
        id: callId,
        status: 'failed',
        updated_at: updatedAt,
        failure_reason: outcome.reason,
        failure_message: outcome.message,
        failed_at: isoTimestamp(outcome.failedAt),
      };
}

export type CallOutcomeCount = repo.CallOutcomeCount;

/** The account's calls in `mode` since `since`, counted per UTC hour or day by status and failure reason (the portal's charts). */
export async function countCallOutcomes(
  db: Db,
  accountId: string,
  mode: CallRow['mode'],
  since: Date,
  unit: SlotUnit,
): Promise<repo.CallOutcomeCount[]> {
  return repo.countCallOutcomes(db, { accountId, mode, since: isoTimestamp(since), slotLength: slotLength[unit] });
}
