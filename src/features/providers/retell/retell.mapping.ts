/**
 * Retell's call object (`GET /v2/get-call`, the `call` of their webhooks) turned into ours. Their field
 * names stop here: the rest of callgate sees `CallOutcome`.
 *
 * `call_status` is `registered | ongoing` while the call lives, then `not_connected` (never answered),
 * `ended` (answered, then hung up) or `error`; `disconnection_reason` says why. The summary comes later, with
 * `call_analysis` (their `call_analyzed` webhook), and so does `in_voicemail`.
 */
import type { CallContent, CallOutcome, FailureReason } from '../provider.interface.js';
import { analysisData, callAnalysis, callContent, recordingUrl, transcriptTurns } from '../provider-content.js';
import { record } from '../provider-http.js';
import { finiteNumber, saneDurationSeconds, saneEpochMs, withoutNul, type OnAdjusted } from '../provider-values.js';

const reasonsOf: Readonly<Record<string, FailureReason>> = {
  dial_busy: 'busy',
  dial_no_answer: 'no_answer',
  voicemail_reached: 'voicemail',
  // The callee's side refused the call.
  user_declined: 'rejected',
  marked_as_spam: 'rejected',
  invalid_destination: 'rejected',
};

/** Their reason for a call ended by `POST /v2/stop-call` (a cancel), answered or not. */
export const retellStoppedReason = 'manual_stopped';

/** Their reason that the call was refused at the concurrency limit: nobody was dialed. */
export const retellConcurrencyReason = 'concurrency_limit_reached';

/** How a Retell call stands, in our terms. */
export type RetellCallState =
  | { readonly kind: 'running' }
  | { readonly kind: 'ended'; readonly outcome: CallOutcome }
  /**
   * Answered and over, its analysis (summary, voicemail) not there yet; `endedAt` is when it ended, or null
   * when Retell did not say (then nobody can tell how long the analysis is overdue).
   */
  | { readonly kind: 'awaiting_analysis'; readonly endedAt: Date | null; readonly outcome: CallOutcome };

/** Their disconnection reason as safe text for a failure message (never their free text). */
function reasonText(value: unknown): string {
  return typeof value === 'string' && /^[a-z0-9_.-]{1,80}$/i.test(value) ? value : 'unknown';
}

function failed(reason: FailureReason, disconnection: string, at: Date, concurrencyRefused = false): CallOutcome {
  const messages: Partial<Record<FailureReason, string>> = {
    busy: 'The line was busy.',
    no_answer: 'Nobody answered.',
    voicemail: 'The call reached voicemail.',
    rejected: 'The call was rejected.',
    cancelled: 'The call was cancelled before it was answered.',
  };
  const lead =
    messages[reason] ??
    (concurrencyRefused
      ? 'The voice provider was at its concurrency limit; nobody was dialed.'
      : 'The voice provider could not complete the call.');
  return {
    status: 'failed',
    reason,
    message: `${lead} (Retell: ${disconnection})`,
    failedAt: at,
    ...(concurrencyRefused ? { concurrencyRefused: true } : {}),
  };
}

/**
 * What a call object kept besides its outcome: `call_analysis.call_successful` and `custom_analysis_data`
 * (not the sentiment or the voicemail flag), `transcript_object`'s turns (each at its first word's start),
 * and `recording_url`. The analysis is null until `call_analyzed` brings it.
 */
export function retellContent(value: unknown): CallContent | undefined {
  const call = record(value);
  const analysis = call.call_analysis === null || call.call_analysis === undefined ? null : record(call.call_analysis);
  const transcript = Array.isArray(call.transcript_object) ? call.transcript_object : null;
  return callContent({
    analysis:
      analysis === null
        ? null
        : callAnalysis(
            typeof analysis.call_successful === 'boolean' ? analysis.call_successful : null,
            analysisData(Object.entries(record(analysis.custom_analysis_data))),
          ),
    turns:
      transcript === null
        ? null
        : transcriptTurns(
            transcript.map((item) => {
              const turn = record(item);
              const words = Array.isArray(turn.words) ? turn.words : [];
              return {
                role: turn.role === 'agent' || turn.role === 'user' ? turn.role : null,
                text: turn.content,
                offset: words.length > 0 ? record(words[0]).start : null,
              };
            }),
          ),
    recording: recordingUrl(call.recording_url),
  });
}

/** Whether someone answered: the call connected (`ended`, not `not_connected`) with a start or a length. */
function wasAnswered(call: Record<string, unknown>): boolean {
  if (call.call_status !== 'ended') return false;
  return finiteNumber(call.start_timestamp) !== null || (finiteNumber(call.duration_ms) ?? 0) > 0;
}

/**
 * A call object as our state. Signed (a webhook) or from their API: values out of range are replaced and
 * reported to `onAdjusted`, never refused, so the call still ends.
 */
export function retellCallState(value: unknown, reference: Date, onAdjusted?: OnAdjusted): RetellCallState {
  const call = record(value);
  const status = call.call_status;
  const disconnection = reasonText(call.disconnection_reason);
  const analysis = call.call_analysis === null || call.call_analysis === undefined ? null : record(call.call_analysis);
  const end = saneEpochMs(call.end_timestamp, reference);
  if (end === null && finiteNumber(call.end_timestamp) !== null)
    onAdjusted?.('call.end_timestamp', call.end_timestamp, reference.toISOString());
  const endedAt = end ?? reference;

  if (status === 'registered' || status === 'ongoing') return { kind: 'running' };
  const content = retellContent(call);
  const withContent = content === undefined ? {} : { content };
  // A stopped call ends `manual_stopped` whether or not anyone answered: the call's own data tells which.
  if (disconnection === retellStoppedReason && !wasAnswered(call)) {
    return { kind: 'ended', outcome: { ...failed('cancelled', disconnection, endedAt), ...withContent } };
  }
  const known = reasonsOf[disconnection];
  if (known) return { kind: 'ended', outcome: { ...failed(known, disconnection, endedAt), ...withContent } };
  if (status === 'not_connected' || status === 'error') {
    const concurrency = disconnection === retellConcurrencyReason;
    return { kind: 'ended', outcome: failed('provider_error', disconnection, endedAt, concurrency) };
  }
  if (status !== 'ended') return { kind: 'running' };
  if (analysis?.in_voicemail === true)
    return { kind: 'ended', outcome: { ...failed('voicemail', 'in_voicemail', endedAt), ...withContent } };

  const duration = saneDurationSeconds(
    finiteNumber(call.duration_ms) === null ? null : (call.duration_ms as number) / 1000,
    'call.duration_ms',
    onAdjusted,
  );
  const start = saneEpochMs(call.start_timestamp, reference);
  if (start === null && finiteNumber(call.start_timestamp) !== null)
    onAdjusted?.('call.start_timestamp', call.start_timestamp, 'the end less the duration');
  const startedAt = start ?? new Date(endedAt.getTime() - duration * 1000);
  const summary =
    typeof analysis?.call_summary === 'string' ? withoutNul(analysis.call_summary, 'call.call_analysis.call_summary', onAdjusted) : '';
  const outcome: CallOutcome = {
    status: 'completed',
    startedAt,
    endedAt: new Date(startedAt.getTime() + duration * 1000),
    durationSeconds: duration,
    transcriptSummary: summary,
    ...withContent,
  };
  return analysis === null ? { kind: 'awaiting_analysis', endedAt: end, outcome } : { kind: 'ended', outcome };
}
