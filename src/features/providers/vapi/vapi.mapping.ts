/**
 * Vapi's call (`GET /call/{id}`) and end-of-call report turned into ours. Their field names stop here.
 *
 * A call's `status` runs `scheduled, queued, ringing, in-progress, forwarding, ended`; once `ended`,
 * `endedReason` (a long enum) says how, `startedAt`/`endedAt` are ISO times, and `analysis.summary` is the
 * summary.
 */
import type { CallContent, CallOutcome, FailureReason } from '../provider.interface.js';
import { analysisData, callAnalysis, callContent, recordingUrl, transcriptTurns } from '../provider-content.js';
import { record } from '../provider-http.js';
import { finiteNumber, saneDurationSeconds, saneIsoTime, withoutNul, type OnAdjusted } from '../provider-values.js';

const reasonsOf: Readonly<Record<string, FailureReason>> = {
  'customer-busy': 'busy',
  'customer-did-not-answer': 'no_answer',
  voicemail: 'voicemail',
  // The callee's side refused the call.
  'vonage-rejected': 'rejected',
  'twilio-reported-customer-misdialed': 'rejected',
};

/** Their end of a call ended through the API (the control URL's `end-call`, a cancel), answered or not. */
export const vapiCancelledReason = 'manually-canceled';

/** Their end of a call refused at the account's concurrency limit: nobody was dialed. */
export const vapiConcurrencyReason = 'call.start.error-subscription-concurrency-limit-reached';

/** Ends that are not a conversation that took place: cancelled, or failed before or during the call. */
function isFailureReason(reason: string): boolean {
  return (
    reason.startsWith('call.start.') ||
    reason.startsWith('call.in-progress.error') ||
    /error|fault|failed|rejected|deleted|canceled|cancelled/.test(reason)
  );
}

/** Their ended reason as safe text for a failure message. */
function reasonText(value: unknown): string {
  return typeof value === 'string' && /^[a-z0-9_.-]{1,120}$/i.test(value) ? value : 'unknown';
}

function failed(reason: FailureReason, endedReason: string, at: Date): CallOutcome {
  const messages: Partial<Record<FailureReason, string>> = {
    busy: 'The line was busy.',
    no_answer: 'Nobody answered.',
    voicemail: 'The call reached voicemail.',
    rejected: 'The call was rejected.',
    cancelled: 'The call was cancelled before it was answered.',
  };
  const concurrency = endedReason === vapiConcurrencyReason;
  const lead =
    messages[reason] ??
    (concurrency
      ? 'The voice provider was at its concurrency limit; nobody was dialed.'
      : 'The voice provider could not complete the call.');
  return {
    status: 'failed',
    reason,
    message: `${lead} (Vapi: ${endedReason})`,
    failedAt: at,
    ...(concurrency ? { concurrencyRefused: true } : {}),
  };
}

const speakers: Readonly<Record<string, 'agent' | 'user'>> = { bot: 'agent', assistant: 'agent', user: 'user' };

/** Their `successEvaluation` when it is a yes or no (`true`/`false`, as text or not); other rubrics judge nothing we show. */
function judgement(value: unknown): boolean | null {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return null;
}

/**
 * What a report or call object kept besides its outcome: `analysis.successEvaluation` and `structuredData`,
 * the spoken turns of `artifact.messages` (system and tool messages left out; `bot` is the agent), and the
 * recording URL (`artifact.recordingUrl`, or the report's older top-level `recordingUrl`).
 */
export function vapiContent(source: unknown): CallContent | undefined {
  const data = record(source);
  const artifact = record(data.artifact);
  const analysis = data.analysis === null || data.analysis === undefined ? null : record(data.analysis);
  const hasAnalysis = analysis !== null && (analysis.structuredData !== undefined || analysis.successEvaluation !== undefined);
  const messages = Array.isArray(artifact.messages) ? artifact.messages : Array.isArray(data.messages) ? data.messages : null;
  return callContent({
    analysis: hasAnalysis
      ? callAnalysis(judgement(analysis.successEvaluation), analysisData(Object.entries(record(analysis.structuredData))))
      : null,
    turns:
      messages === null
        ? null
        : transcriptTurns(
            messages.map((item) => {
              const message = record(item);
              return { role: speakers[String(message.role)] ?? null, text: message.message, offset: message.secondsFromStart };
            }),
          ),
    recording: recordingUrl(artifact.recordingUrl) ?? recordingUrl(data.recordingUrl),
  });
}

/**
 * The outcome of an ended call, from the fields its report and its call object share (`endedReason`,
 * `startedAt`, `endedAt`, `analysis`). Values out of range are replaced and reported, never refused.
 */
export function vapiOutcome(source: unknown, reference: Date, onAdjusted?: OnAdjusted): CallOutcome {
  const data = record(source);
  const endedReason = reasonText(data.endedReason);
  const end = saneIsoTime(data.endedAt, reference);
  if (end === null && data.endedAt !== undefined && data.endedAt !== null) onAdjusted?.('endedAt', data.endedAt, reference.toISOString());
  const endedAt = end ?? reference;
  const content = vapiContent(data);
  const withContent = content === undefined ? {} : { content };
  const start = saneIsoTime(data.startedAt, reference);
  // A cancelled call ends `manually-canceled` whether or not anyone answered: a start time says it was.
  const cancelled = endedReason === vapiCancelledReason;
  if (cancelled && start === null) return { ...failed('cancelled', endedReason, endedAt), ...withContent };
  const known = reasonsOf[endedReason];
  if (known) return { ...failed(known, endedReason, endedAt), ...withContent };
  if (!cancelled && isFailureReason(endedReason)) return failed('provider_error', endedReason, endedAt);

  if (start === null && data.startedAt !== undefined && data.startedAt !== null)
    onAdjusted?.('startedAt', data.startedAt, 'the end less the duration');
  const sentSeconds = start !== null ? (endedAt.getTime() - start.getTime()) / 1000 : finiteNumber(data.durationSeconds);
  const duration = saneDurationSeconds(sentSeconds, start !== null ? 'endedAt - startedAt' : 'durationSeconds', onAdjusted);
  const startedAt = start ?? new Date(endedAt.getTime() - duration * 1000);
  const analysis = record(data.analysis);
  const sentSummary = typeof analysis.summary === 'string' ? analysis.summary : typeof data.summary === 'string' ? data.summary : '';
  return {
    status: 'completed',
    startedAt,
    endedAt: new Date(startedAt.getTime() + duration * 1000),
    durationSeconds: duration,
    transcriptSummary: withoutNul(sentSummary, 'analysis.summary', onAdjusted),
    ...withContent,
  };
}
