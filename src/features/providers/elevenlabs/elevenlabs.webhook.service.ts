/**
 * Turns ElevenLabs post-call webhooks into call outcomes: `post_call_transcription` → completed,
 * `call_initiation_failure` → failed. A webhook delivered twice records one outcome (and so one event);
 * one for a conversation not stored yet is held until its call is (a create whose answer was lost); other
 * types are acknowledged and ignored.
 */
import { recordReportedOutcome } from '../../calls/calls.service.js';
import { dialIdVariable } from './elevenlabs.provider.js';
import type { ProviderWebhookDeps, ProviderWebhookHandling } from '../provider-webhook.deps.js';
import { completedOutcome, initiationFailureOutcome, saneUnixSeconds, type OnAdjusted } from './elevenlabs.mapping.js';

export async function handleElevenLabsWebhook(deps: ProviderWebhookDeps, payload: unknown): Promise<ProviderWebhookHandling> {
  const event = (payload ?? {}) as { type?: unknown; data?: unknown; event_timestamp?: unknown };
  if (event.type !== 'post_call_transcription' && event.type !== 'call_initiation_failure') return 'ignored';
  const data = (event.data ?? {}) as { conversation_id?: unknown };
  if (typeof data.conversation_id !== 'string' || data.conversation_id.length > 200 || data.conversation_id.includes('\u0000')) {
    deps.logger.warn({ type: event.type }, 'ElevenLabs webhook without a usable conversation_id');
    return 'unknown_conversation';
  }
  // Signed, so the outcome is kept; a value out of range is replaced, with a warning that names it.
  const onAdjusted: OnAdjusted = (field, sent, kept) =>
    deps.logger.warn(
      { type: event.type, conversationId: data.conversation_id, field, sent: String(sent).slice(0, 60), kept },
      'ElevenLabs webhook value out of range; replaced',
    );
  const now = deps.clock.now();
  const at = saneUnixSeconds(event.event_timestamp, now) ?? now;
  if (typeof event.event_timestamp === 'number' && at === now) onAdjusted('event_timestamp', event.event_timestamp, now.toISOString());
  const outcome =
    event.type === 'post_call_transcription' ? completedOutcome(event.data, at, onAdjusted) : initiationFailureOutcome(event.data, at);
  const reported = await recordReportedOutcome(
    deps.db,
    deps.clock,
    { provider: 'elevenlabs', conversationId: data.conversation_id, dialId: dialIdOf(event.data), outcome },
    deps.observeEnded,
  );
  if (reported.handling === 'held') {
    // A call not stored yet: its create answer was lost (or is being stored). Kept until it is.
    deps.logger.info(
      { type: event.type, conversationId: data.conversation_id },
      'ElevenLabs webhook for a conversation not stored yet; held until its call is',
    );
    return 'held';
  }
  // Deliveries to make, or a batch's slot freed: the workers (of every process) look now.
  if (reported.deliveries > 0 || (reported.handling === 'recorded' && reported.call?.batch_id !== null)) deps.onOutcome();
  return reported.handling;
}

/** callgate's dial id in a conversation's data: its user_id, or the dynamic variable (dial ids only). */
function dialIdOf(data: unknown): string | null {
  const record = (value: unknown): Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  const conversation = record(data);
  const clientData = record(conversation.conversation_initiation_client_data);
  for (const candidate of [conversation.user_id, clientData.user_id, record(clientData.dynamic_variables)[dialIdVariable]]) {
    if (typeof candidate === 'string' && /^dial_[0-9a-z]{26}$/.test(candidate)) return candidate;
  }
  return null;
}
