/**
 * ElevenLabs' shapes turned into ours. Their field names stop here: the rest of callgate sees only
 * `CallOutcome` and `ProviderFailure`.
 */
import type { CallContent, CallOutcome, FailureReason, ProviderFailure } from '../provider.interface.js';
import { analysisData, callAnalysis, callContent, transcriptTurns } from '../provider-content.js';
import type { ProviderResponse as ElevenLabsResponse } from '../provider-http.js';
import { maxCallSeconds, saneUnixSeconds, withoutNul, type OnAdjusted } from '../provider-values.js';
import { callRequestFailure, record } from '../provider-http.js';

export { maxCallSeconds, saneUnixSeconds, withoutNul, type OnAdjusted };

function finiteNumber(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

/** Their `failure_reason` (`busy`, `no-answer`, `unknown`) as ours. */
export function failureReasonOf(value: unknown): FailureReason {
  if (value === 'busy') return 'busy';
  if (value === 'no-answer' || value === 'no_answer') return 'no_answer';
  return 'unknown';
}

/** The system tool an ElevenLabs agent calls when it hears a voicemail greeting (it then ends the call). */
const voicemailTool = 'voicemail_detection';

/**
 * Whether ElevenLabs' own voicemail detection ended the conversation: its agent called the
 * `voicemail_detection` system tool, or the termination reason says voicemail. (ElevenLabs counts such a
 * call as a successful initiation, so no call_initiation_failure says it.)
 */
export function reachedVoicemail(conversation: unknown): boolean {
  const data = record(conversation);
  const termination = record(data.metadata).termination_reason;
  if (typeof termination === 'string' && /voice ?mail/i.test(termination)) return true;
  const transcript = Array.isArray(data.transcript) ? data.transcript : [];
  return transcript.some((turn) => {
    const calls = record(turn).tool_calls;
    return Array.isArray(calls) && calls.some((call) => record(call).tool_name === voicemailTool);
  });
}

const judgements: Readonly<Record<string, boolean | null>> = { success: true, failure: false, unknown: null };

/**
 * What a conversation kept besides its outcome: `analysis.call_successful` and each
 * `data_collection_results` id's `value` (not the evaluation criteria), the transcript's spoken turns (a
 * turn that only calls a tool has no message), and its audio, served by their API unless `has_audio` is false.
 */
export function conversationContent(conversation: unknown): CallContent | undefined {
  const data = record(conversation);
  const analysis = data.analysis === null || data.analysis === undefined ? null : record(data.analysis);
  const results = record(analysis?.data_collection_results);
  const transcript = Array.isArray(data.transcript) ? data.transcript : null;
  return callContent({
    analysis:
      analysis === null
        ? null
        : callAnalysis(
            judgements[String(analysis.call_successful)] ?? null,
            analysisData(Object.entries(results).map(([id, result]) => [id, record(result).value] as const)),
          ),
    turns:
      transcript === null
        ? null
        : transcriptTurns(
            transcript.map((item) => {
              const turn = record(item);
              const role = turn.role === 'agent' || turn.role === 'user' ? turn.role : null;
              return { role, text: turn.message, offset: turn.time_in_call_secs };
            }),
          ),
    recording: data.has_audio === false ? null : { kind: 'provider' },
  });
}

/**
 * A finished conversation (post_call_transcription `data`, or GET conversation) as a completed call, or as
 * failed with `voicemail` when their voicemail detection ended it (at its end). The data is signed, so the call's outcome is kept even when a value is out of range: a duration is clamped to
 * 0..maxCallSeconds, a start time beyond belief is replaced by the end less the duration, NULs are dropped,
 * and each such change is reported to `onAdjusted`.
 */
export function completedOutcome(conversation: unknown, fallbackEnd: Date, onAdjusted?: OnAdjusted): CallOutcome {
  const data = record(conversation);
  const metadata = record(data.metadata);
  const analysis = record(data.analysis);
  const sentDuration = finiteNumber(metadata.call_duration_secs);
  const duration = Math.min(maxCallSeconds, Math.max(0, Math.round(sentDuration ?? 0)));
  if (sentDuration !== null && duration !== Math.round(sentDuration)) onAdjusted?.('metadata.call_duration_secs', sentDuration, duration);
  const sentStart = metadata.start_time_unix_secs;
  const start = saneUnixSeconds(sentStart, fallbackEnd);
  const startedAt = start ?? new Date(fallbackEnd.getTime() - duration * 1000);
  if (start === null && finiteNumber(sentStart) !== null) onAdjusted?.('metadata.start_time_unix_secs', sentStart, startedAt.toISOString());
  const summary =
    typeof analysis.transcript_summary === 'string'
      ? withoutNul(analysis.transcript_summary, 'analysis.transcript_summary', onAdjusted)
      : '';
  const content = conversationContent(conversation);
  const withContent = content === undefined ? {} : { content };
  if (reachedVoicemail(conversation)) {
    const message = 'The call reached voicemail (ElevenLabs voicemail detection).';
    return { status: 'failed', reason: 'voicemail', message, failedAt: new Date(startedAt.getTime() + duration * 1000), ...withContent };
  }
  return {
    status: 'completed',
    startedAt,
    endedAt: new Date(startedAt.getTime() + duration * 1000),
    durationSeconds: duration,
    transcriptSummary: summary,
    ...withContent,
  };
}

/** A `call_initiation_failure` event's `data` as a failed call. */
export function initiationFailureOutcome(data: unknown, at: Date): CallOutcome {
  const body = record(data);
  const reason = failureReasonOf(body.failure_reason);
  const messages: Record<FailureReason, string> = {
    busy: 'The line was busy.',
    no_answer: 'Nobody answered.',
    voicemail: 'The call reached voicemail.',
    rejected: 'The call was rejected.',
    cancelled: 'The call was cancelled.',
    provider_error: 'The voice provider could not place the call.',
    timeout: 'The call did not end in time.',
    unknown: 'The call could not be connected.',
  };
  return { status: 'failed', reason, message: messages[reason], failedAt: at };
}

/**
 * A conversation that ElevenLabs reports as `failed`. Unlike `call_initiation_failure`, it carries no
 * failure_reason field; its free-text error or termination reason is read for a busy line or a call nobody
 * answered (the words their telephony uses), and anything else is the provider's failure.
 */
export function failedConversationOutcome(conversation: unknown, at: Date): CallOutcome {
  const metadata = record(record(conversation).metadata);
  const error = record(metadata.error);
  const termination = typeof metadata.termination_reason === 'string' ? metadata.termination_reason : null;
  const errorReason = typeof error.reason === 'string' ? error.reason : null;
  const text = `${errorReason ?? ''} ${termination ?? ''}`;
  const reason: FailureReason = /\bbusy\b/i.test(text)
    ? 'busy'
    : /\bno[-_ ]?answer\b|\bunanswered\b|\bnot answered\b/i.test(text)
      ? 'no_answer'
      : 'provider_error';
  return {
    status: 'failed',
    reason,
    message: withoutNul(
      errorReason ?? termination ?? 'The voice provider reports the conversation as failed.',
      'metadata.error.reason',
    ).slice(0, 500),
    failedAt: at,
  };
}

/** Field names a 422 complained about, for a message that helps without exposing their internals. */
function invalidFields(body: unknown): string[] {
  const detail = record(body).detail;
  if (!Array.isArray(detail)) return [];
  return detail
    .map((item) => record(item).loc)
    .filter((loc): loc is unknown[] => Array.isArray(loc))
    .map((loc) => String(loc[loc.length - 1]))
    .filter((name) => /^[a-z_]{1,64}$/.test(name));
}

const fieldNames: Record<string, string> = {
  to_number: 'to',
  agent_id: 'agent_id',
  agent_phone_number_id: "the agent's phone number",
  dynamic_variables: 'metadata',
  conversation_initiation_client_data: 'metadata',
};

/** Words for a 4xx of theirs about a call: the fields a 422 or 400 named, never their body itself. */
function refusal(status: number, body: unknown): string {
  if (status === 404) return "The voice provider does not know this agent or the agent's phone number.";
  if (status === 422 || status === 400) {
    const fields = [...new Set(invalidFields(body).map((name) => fieldNames[name] ?? name))];
    const which = fields.length > 0 ? ` (${fields.join(', ')})` : '';
    return `The voice provider rejected the call request as invalid${which}.`;
  }
  return `The voice provider refused the call (HTTP ${status}).`;
}

/** The failure of a request about a call (create, look-up, search), as for every provider but in ElevenLabs' refusals. */
export function placeCallFailure(response: Exclude<ElevenLabsResponse, { kind: 'ok' }>): ProviderFailure {
  return callRequestFailure(response, refusal);
}
