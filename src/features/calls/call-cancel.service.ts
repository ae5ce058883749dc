/**
 * Stopping a call (POST /v1/calls/{id}/cancel): the provider is asked to end it, ringing or live, and the
 * call then ends through the usual path (a webhook, the monitor), with one terminal event: `call.failed` /
 * `cancelled` when nobody had answered, `call.completed` otherwise. callgate never reports the end itself
 * before the provider does; it only notes when the provider agreed (`cancel_requested_at`) and looks at the
 * call at once.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp, type Clock } from '../../lib/clock.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Result } from '../../lib/result.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { CallToCancel, CancelAnswer, ProviderFailure } from '../providers/provider.interface.js';
import * as repo from './calls.repository.js';
import type { Call } from './calls.schemas.js';
import { toCall } from './calls.service.js';
import type { CallRow } from './calls.tables.js';

export interface CallCancelDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly providers: ProviderRegistry;
  /** Told about a call to look at now (the call monitor's prompt timer). */
  readonly onCallPlaced?: (callId: string, checkAt: Date) => void;
}

/**
 * Pauses between the tries of one cancel whose answer was lost (no answer in time, a 5xx, a dropped
 * connection): every provider's stop is idempotent, so asking again is safe, and most such losses are brief.
 */
const retryPausesMs = [250, 1_000];

/** Seconds a client waits before asking again when the provider could not be asked. */
const retryAfterSeconds = 2;

function alreadyEnded(call: Pick<CallRow, 'id' | 'status'>, detail: string): ApiError {
  return new ApiError(
    'call_already_ended',
    `The call ${call.id} has already ended${detail}, so there is nothing to cancel. Read its outcome with GET /v1/calls/${call.id}.`,
  );
}

/** The provider could not end the call: the call is as it was, and asking again is safe. */
function cancelFailureError(failure: ProviderFailure): ApiError {
  if (failure.kind === 'rejected') return new ApiError('provider_error', failure.message);
  return new ApiError('provider_unavailable', `${failure.message} The call is as it was; cancelling again is safe.`, {
    retryAfterSeconds: failure.kind === 'unavailable' ? (failure.retryAfterSeconds ?? retryAfterSeconds) : retryAfterSeconds,
  });
}

async function askToEnd(
  cancel: (call: CallToCancel) => Promise<Result<CancelAnswer, ProviderFailure>>,
  call: CallToCancel,
): Promise<Result<CancelAnswer, ProviderFailure>> {
  let answer = await cancel(call);
  for (const pauseMs of retryPausesMs) {
    if (answer.ok || (answer.error.kind !== 'timeout' && answer.error.kind !== 'uncertain')) break;
    await sleep(pauseMs);
    answer = await cancel(call);
  }
  return answer;
}

/** Calls of one batch asked to end at once: each is a request to its provider. */
const batchHangUpConcurrency = 4;

/**
 * Asks the providers to end every call of the batch that is under way (a batch cancelled with hang_up). A
 * call that ends meanwhile, or whose provider cannot end calls (ElevenLabs), is left to end on its own; the
 * failures of providers that could not be asked are returned, for the caller to say that a retry is needed.
 */
export async function hangUpCallsOfBatch(deps: CallCancelDeps, batchId: string): Promise<{ asked: number; failed: ApiError[] }> {
  const calls = await repo.openCallsOfBatch(deps.db, batchId);
  const failed: ApiError[] = [];
  let next = 0;
  const lane = async () => {
    while (next < calls.length) {
      const call = calls[next++]!;
      try {
        await cancelCall(deps, { accountId: call.account_id, mode: call.mode }, call.id);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.code === 'provider_error' || error.code === 'provider_unavailable') failed.push(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(batchHangUpConcurrency, calls.length) }, lane));
  return { asked: calls.length, failed };
}

/**
 * Cancels the key's call: the 202's call, with `cancel_requested_at`. A call whose cancel was agreed already
 * answers the same, and nothing more is asked of the provider.
 */
export async function cancelCall(
  deps: CallCancelDeps,
  scope: { readonly accountId: string; readonly mode: ApiKeyMode },
  id: string,
): Promise<Call> {
  const { db, clock } = deps;
  const call = id.includes('\u0000') ? undefined : await repo.findCallInAccount(db, scope.accountId, id, scope.mode);
  if (!call) throw new ApiError('not_found', `No ${scope.mode}-mode call ${id} in this account.`);
  if (call.status !== 'initiated') throw alreadyEnded(call, ` (${call.status})`);
  if (call.cancel_requested_at !== null) return toCall(call);

  const provider = deps.providers.byName(call.provider);
  if (typeof provider.cancel !== 'function') throw new ApiError('cancel_not_supported', provider.cancel.reason);
  const answer = await askToEnd(provider.cancel, {
    conversationId: call.provider_conversation_id,
    control: call.provider_control,
    to: call.to_number,
    createdAt: new Date(call.created_at),
  });
  if (!answer.ok) throw cancelFailureError(answer.error);

  const now = clock.now();
  if (answer.value.state === 'already_ended') {
    // Over at the provider, not yet here: its outcome is read now, and comes as its event.
    await repo.setNextCheck(db, call.id, isoTimestamp(now));
    deps.onCallPlaced?.(call.id, now);
    throw alreadyEnded(call, ' at its voice provider (its call.completed or call.failed event follows)');
  }
  const marked = await repo.markCancelRequested(db, call.id, isoTimestamp(now));
  if (marked) {
    deps.onCallPlaced?.(call.id, now);
    return toCall(marked);
  }
  // Another cancel was agreed meanwhile (its time stands), or the call's own end came first.
  const current = await repo.findCallById(db, call.id);
  if (current && current.status === 'initiated') return toCall(current);
  throw alreadyEnded(current ?? call, current ? ` (${current.status})` : '');
}
