/**
 * Turns Retell's webhooks into call outcomes. `call_ended` ends a call that was never answered, or reached
 * voicemail, at once; an answered call waits for `call_analyzed`, which brings the summary (the call monitor
 * looks at the call once `retellAnalysisWaitMs` has passed without it, and completes it without a summary).
 * `call_analyzed` records the outcome whatever came before: one event per call, whatever the order or the
 * number of deliveries. A webhook for a call we do not know is acknowledged and logged; other events are
 * acknowledged and ignored.
 */
import { callIdOf } from '../../../lib/ids.js';
import { findCallById, recordOutcome, recordReportedOutcome, scheduleCheck } from '../../calls/calls.service.js';
import { record } from '../provider-http.js';
import type { ProviderWebhookDeps, ProviderWebhookHandling } from '../provider-webhook.deps.js';
import type { OnAdjusted } from '../provider-values.js';
import { retellCallState } from './retell.mapping.js';
import { dialIdKey, providerCallIdRule } from '../provider-checks.js';
import { retellAnalysisWaitMs } from './retell.provider.js';

export async function handleRetellWebhook(deps: ProviderWebhookDeps, payload: unknown): Promise<ProviderWebhookHandling> {
  const body = record(payload);
  // Their docs write `event`; one page writes `event_type`.
  const event = body.event ?? body.event_type;
  if (event !== 'call_ended' && event !== 'call_analyzed') return 'ignored';
  const providerCallId = record(body.call).call_id;
  if (typeof providerCallId !== 'string' || !providerCallIdRule.test(providerCallId)) {
    deps.logger.warn({ event }, 'Retell webhook without a usable call_id');
    return 'unknown_conversation';
  }
  const callId = callIdOf(providerCallId);
  const call = await findCallById(deps.db, callId);
  const onAdjusted: OnAdjusted = (field, sent, kept) =>
    deps.logger.warn(
      { event, providerCallId, field, sent: String(sent).slice(0, 60), kept },
      'Retell webhook value out of range; replaced',
    );
  const state = retellCallState(body.call, deps.clock.now(), onAdjusted);
  if (call?.provider !== 'retell') {
    // A call not stored yet (its create answer was lost): a final report is held until it is, never dropped.
    if (state.kind === 'ended' && event === 'call_analyzed') {
      const dialId = record(record(body.call).metadata)[dialIdKey];
      await recordReportedOutcome(deps.db, deps.clock, {
        provider: 'retell',
        conversationId: providerCallId,
        dialId: typeof dialId === 'string' ? dialId : null,
        outcome: state.outcome,
      });
      deps.logger.info({ event, providerCallId }, 'Retell webhook for a call not stored yet; held until its call is');
      return 'held';
    }
    deps.logger.info({ event, providerCallId }, 'Retell webhook for an unknown call; acknowledged');
    return 'unknown_conversation';
  }
  if (state.kind === 'running') return 'ignored';
  if (state.kind === 'awaiting_analysis' && event === 'call_ended') {
    if (call.status !== 'initiated') return 'duplicate';
    const at = new Date(Math.max(deps.clock.now().getTime(), state.endedAt?.getTime() ?? 0) + retellAnalysisWaitMs);
    await scheduleCheck(deps.db, callId, at);
    deps.onCheckDue?.(callId, at);
    return 'awaiting_outcome';
  }
  // call_analyzed always carries call_analysis; should one lack it, the call completes without a summary.
  const recorded = await recordOutcome(deps.db, deps.clock, callId, state.outcome, deps.observeEnded);
  // Deliveries to make, or a batch's slot freed: the workers (of every process) look now.
  if (recorded.deliveries > 0 || (recorded.ended && call.batch_id !== null)) deps.onOutcome();
  return recorded.ended ? 'recorded' : 'duplicate';
}
