/**
 * Turns Vapi's server messages into call outcomes: `end-of-call-report` records the outcome (once, however
 * often or late it comes); a `status-update` is accepted, and one saying `ended` has the call monitor look
 * at the call soon, should the report never come. A message for a call we do not know is acknowledged and
 * logged; other types are acknowledged and ignored.
 */
import { callIdOf } from '../../../lib/ids.js';
import { findCallById, recordOutcome, recordReportedOutcome, scheduleCheck } from '../../calls/calls.service.js';
import { record } from '../provider-http.js';
import type { ProviderWebhookDeps, ProviderWebhookHandling } from '../provider-webhook.deps.js';
import type { OnAdjusted } from '../provider-values.js';
import { dialIdKey, providerCallIdRule } from '../provider-checks.js';
import { vapiOutcome } from './vapi.mapping.js';

/** After a `status-update` saying `ended`, how long the end-of-call report is waited for before the call is looked up. */
export const vapiReportWaitMs = 2 * 60_000;

export async function handleVapiWebhook(deps: ProviderWebhookDeps, payload: unknown): Promise<ProviderWebhookHandling> {
  const message = record(record(payload).message);
  const type = message.type;
  if (type !== 'end-of-call-report' && type !== 'status-update') return 'ignored';
  const providerCallId = record(message.call).id;
  if (typeof providerCallId !== 'string' || !providerCallIdRule.test(providerCallId)) {
    deps.logger.warn({ type }, 'Vapi server message without a usable call id');
    return 'unknown_conversation';
  }
  const callId = callIdOf(providerCallId);
  const call = await findCallById(deps.db, callId);
  if (call?.provider !== 'vapi') {
    // A call not stored yet (its create answer was lost): its report is held until it is, never dropped.
    if (type === 'end-of-call-report') {
      const vapiCall = record(message.call);
      const dialId = record(vapiCall.customer).externalId ?? record(record(vapiCall.assistantOverrides).metadata)[dialIdKey];
      await recordReportedOutcome(deps.db, deps.clock, {
        provider: 'vapi',
        conversationId: providerCallId,
        dialId: typeof dialId === 'string' ? dialId : null,
        outcome: vapiOutcome(message, deps.clock.now()),
      });
      deps.logger.info({ type, providerCallId }, 'Vapi server message for a call not stored yet; held until its call is');
      return 'held';
    }
    deps.logger.info({ type, providerCallId }, 'Vapi server message for an unknown call; acknowledged');
    return 'unknown_conversation';
  }
  if (type === 'status-update') {
    if (call.status !== 'initiated') return 'duplicate';
    if (message.status === 'ended') {
      const at = new Date(deps.clock.now().getTime() + vapiReportWaitMs);
      await scheduleCheck(deps.db, callId, at);
      deps.onCheckDue?.(callId, at);
      return 'awaiting_outcome';
    }
    // Ringing, in progress, forwarding: the call stands as it did (a batch's recipient is in progress already).
    return 'accepted';
  }
  const onAdjusted: OnAdjusted = (field, sent, kept) =>
    deps.logger.warn(
      { type, providerCallId, field, sent: String(sent).slice(0, 60), kept },
      'Vapi server message value out of range; replaced',
    );
  const outcome = vapiOutcome(message, deps.clock.now(), onAdjusted);
  const recorded = await recordOutcome(deps.db, deps.clock, callId, outcome, deps.observeEnded);
  // Deliveries to make, or a batch's slot freed: the workers (of every process) look now.
  if (recorded.deliveries > 0 || (recorded.ended && call.batch_id !== null)) deps.onOutcome();
  return recorded.ended ? 'recorded' : 'duplicate';
}
