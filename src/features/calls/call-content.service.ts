/**
 * What happened on a call, past its outcome: the transcript and the recording of an ended call, for the
 * API (a key's calls of its mode) and the portal (a session's calls of either mode), and their deletion once
 * CALLGATE_TRANSCRIPT_RETENTION has passed. Stored content comes from the providers' reports
 * (calls.service `recordOutcomes`); the recording stays at the provider and is streamed from there on request.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isoTimestamp } from '../../lib/clock.js';
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { RecordingSource, RecordingStream, TranscriptTurn } from '../providers/provider.interface.js';
import { rewriteCallEvents, type EventEnvelope } from '../events/events.service.js';
import * as repo from './calls.repository.js';
import * as contentRepo from './call-content.repository.js';
import type { CallTranscript } from './calls.schemas.js';
import type { CallRow } from './calls.tables.js';

/** Whose call may be read: an account's, and with `mode`, only one made in that mode (an API key's). */
export interface CallScope {
  readonly accountId: string;
  readonly mode?: CallRow['mode'];
}

/** After a provider failed to serve a recording, when to try again (when it said nothing itself). */
const recordingRetrySeconds = 5;

/** The call, ended; or the 404 or 409 that says why its content cannot be read. */
async function endedCall(db: Db, scope: CallScope, id: string, path: 'transcript' | 'recording'): Promise<CallRow> {
  const call = id.includes('\u0000') ? undefined : await repo.findCallInAccount(db, scope.accountId, id, scope.mode);
  if (!call) {
    const which = scope.mode === undefined ? 'call' : `${scope.mode}-mode call`;
    throw new ApiError('not_found', `No ${which} ${id} in this account. Check the id: GET /v1/calls lists the account's calls.`);
  }
  if (call.status === 'initiated') {
    throw new ApiError(
      'call_not_ended',
      `The call ${id} has not ended yet, so it has no ${path} to read. Wait for its call.completed or call.failed event (or GET /v1/calls/${id} until its status is completed or failed), then read it again.`,
    );
  }
  return call;
}

/** GET /v1/calls/{id}/transcript: the ended call's turns, in order (none when the provider kept none, or after the retention). */
export async function readTranscript(db: Db, scope: CallScope, id: string): Promise<CallTranscript> {
  const call = await endedCall(db, scope, id, 'transcript');
  const content = await contentRepo.findContent(db, call.id);
  const turns = content?.turns ? (JSON.parse(content.turns) as TranscriptTurn[]) : [];
  return {
    call_id: call.id,
    turns: turns.map((turn) => ({ role: turn.role, text: turn.text, offset_seconds: turn.offsetSeconds })),
  };
}

/**
 * GET /v1/calls/{id}/recording: the ended call's recording as it comes from the provider, with callgate's
 * credentials; the caller streams it on. 404 `recording_not_available` when the provider has none (or no
 * more), or the retention has passed; 503 `provider_unavailable` when it cannot be had now.
 */
export async function openRecording(
  db: Db,
  providers: ProviderRegistry,
  scope: CallScope,
  id: string,
  log?: Pick<FastifyBaseLogger, 'warn'>,
): Promise<RecordingStream> {
  const call = await endedCall(db, scope, id, 'recording');
  const content = await contentRepo.findContent(db, call.id);
  const notAvailable = new ApiError(
    'recording_not_available',
    content
      ? `The call ${call.id} has no recording at its voice provider (it kept none, or no longer has it). Its transcript may still be read: GET /v1/calls/${call.id}/transcript.`
      : `The call ${call.id} has no recording here: its provider kept none, or its content was deleted after the retention period the operator set (CALLGATE_TRANSCRIPT_RETENTION).`,
  );
  if (!content?.recording) throw notAvailable;
  const source = JSON.parse(content.recording) as RecordingSource;
  const fetched = await providers.byName(call.provider).fetchRecording({ conversationId: call.provider_conversation_id }, source);
  if (fetched.ok) return fetched.value;
  if (fetched.error.kind === 'not_available') throw notAvailable;
  // The operator's to see (a key refused, a provider down): the message is ours, never the provider's URL.
  log?.warn(
    { callId: call.id, provider: call.provider, failure: fetched.error.kind, reason: fetched.error.message },
    'recording could not be fetched from the provider',
  );
  const retryAfterSeconds =
    fetched.error.kind === 'unavailable' ? (fetched.error.retryAfterSeconds ?? recordingRetrySeconds) : recordingRetrySeconds;
  throw new ApiError(
    'provider_unavailable',
    `The voice provider could not serve the recording of ${call.id} just now (${fetched.error.message.replace(/\.$/, '')}). Retry after the number of seconds in Retry-After.`,
    { retryAfterSeconds },
  );
}

/**
 * Whether an ended call has a recording to ask its provider for (the portal shows a player then), without
 * asking the provider: false when it kept none, or once the retention period has passed. The caller has
 * already read the call in its scope.
 */
export async function recordingKept(db: Db, callId: string): Promise<boolean> {
  return contentRepo.hasRecordingSource(db, callId);
}

/** A file name extension for a recording's type (the download's name). */
export function extensionOf(contentType: string): string {
  const known: Record<string, string> = {
    'audio/mpeg': 'mp3',
    'audio/wav': 'wav',
    'audio/x-wav': 'wav',
    'audio/ogg': 'ogg',
    'audio/webm': 'webm',
  };
  return known[contentType] ?? 'bin';
}

/** An envelope of call.completed without the analysis data it carried (its judgement stays). */
function forgetAnalysisData(envelope: EventEnvelope): EventEnvelope {
  const data = envelope.data as { analysis?: { data?: unknown } } | null;
  if (!data?.analysis?.data || Object.keys(data.analysis.data).length === 0) return envelope;
  return { ...envelope, data: { ...data, analysis: { ...data.analysis, data: {} } } };
}

/**
 * Deletes the transcripts, recording sources and analysis data of up to `limit` calls whose content was
 * stored more than `retentionMs` before `now`, oldest first: the calls, their summaries, judgements and
 * events stay. Returns how many calls it purged (the retention job asks again at once when that is `limit`).
 */
export async function purgeExpiredContent(db: Db, now: Date, retentionMs: number, limit: number): Promise<number> {
  const cutoff = isoTimestamp(new Date(now.getTime() - retentionMs));
  const ids = await contentRepo.contentStoredBefore(db, cutoff, limit);
  if (ids.length === 0) return 0;
  await db.transaction().execute(async (trx) => {
    await contentRepo.purgeContent(trx, ids);
    // Their call.completed events carried the analysis data too: forgotten there as well.
    await rewriteCallEvents(trx, ids, 'call.completed', forgetAnalysisData);
  });
  return ids.length;
}
