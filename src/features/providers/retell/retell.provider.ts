/**
 * Real calls through Retell AI. A call is `POST /v2/create-phone-call` from the agent's number with the
 * agent as `override_agent_id`; metadata travels as `retell_llm_dynamic_variables` (strings only), and
 * callgate's dial id as `metadata.callgate_dial_id` (searchable by `POST /v3/list-calls`) and a dynamic
 * variable. Outcomes arrive by their webhooks; for calls that stay silent, `checkCall` asks
 * `GET /v2/get-call/{id}` (reconciliation) and gives up after 24 hours.
 */
import { recordingFromSource } from '../recording-fetch.js';
import type { Clock } from '../../../lib/clock.js';
import { err, ok } from '../../../lib/result.js';
import { checkLater, dialIdKey, givenUp, isPastGiveUp, providerCallIdRule, stringVariables } from '../provider-checks.js';
import {
  callRequestFailure,
  cancelRequestFailure,
  concurrencyFailure,
  record,
  type ProviderErrorResponse,
  type ProviderHttpClient,
} from '../provider-http.js';
import type { CallCheck, ProviderFailure, VoiceProvider } from '../provider.interface.js';
import { retellCallState, retellConcurrencyReason } from './retell.mapping.js';

/** How long after a call ended its analysis (the summary) is waited for before it completes without one. */
export const retellAnalysisWaitMs = 3 * 60_000;
const maxSearchResults = 50;

function refusal(status: number): string {
  if (status === 400) return 'The voice provider rejected the call request as invalid.';
  if (status === 402) return 'The voice provider refused the call: its account cannot pay for calls; the operator must check it.';
  if (status === 404 || status === 422) return "The voice provider does not know this agent or the agent's number to call from.";
  return `The voice provider refused the call (HTTP ${status}).`;
}

export function retellCallFailure(response: ProviderErrorResponse): ProviderFailure {
  return callRequestFailure(response, refusal);
}

/** How a Retell call stands now, from its call object: ended, or when to look again. */
export function retellCheck(call: unknown, now: Date, createdAt: Date): CallCheck {
  const state = retellCallState(call, now);
  if (state.kind === 'ended') return { state: 'ended', outcome: state.outcome };
  if (state.kind === 'awaiting_analysis') {
    // Without its end time, the wait would start again at every look: it completes at once instead.
    if (state.endedAt === null) return { state: 'ended', outcome: state.outcome };
    const waitUntil = state.endedAt.getTime() + retellAnalysisWaitMs;
    // Over, and its analysis did not come in time: completed without a summary.
    if (now.getTime() >= waitUntil) return { state: 'ended', outcome: state.outcome };
    return { state: 'running', checkAgainAt: new Date(waitUntil) };
  }
  return isPastGiveUp(now, createdAt) ? givenUp(now) : checkLater(now, createdAt);
}

export function createRetellProvider(options: { client: ProviderHttpClient; clock: Clock; reconcileAfterMs: number }): VoiceProvider {
  const { client, clock } = options;
  return {
    name: 'retell',
    firstCheckDelayMs: options.reconcileAfterMs,

    async placeCall(request) {
      if (!request.phoneNumberId) {
        return err({ kind: 'rejected', message: 'The agent has no number to call from; the operator must set one.', retryable: false });
      }
      const body = {
        from_number: request.phoneNumberId,
        to_number: request.to,
        override_agent_id: request.agentId,
        retell_llm_dynamic_variables: { ...stringVariables(request.metadata), [dialIdKey]: request.dialId },
        metadata: { [dialIdKey]: request.dialId },
      };
      const response = await client.request('POST', '/v2/create-phone-call', body);
      if (response.kind !== 'ok') return err(retellCallFailure(response));
      const call = record(response.body);
      // Refused at their concurrency limit as a call record rather than an HTTP error: nobody was dialed.
      if (call.disconnection_reason === retellConcurrencyReason) return err(concurrencyFailure());
      const callId = call.call_id;
      if (typeof callId !== 'string' || !providerCallIdRule.test(callId)) {
        return err({
          kind: 'uncertain',
          message: 'The voice provider answered without a call id callgate can read. The call may or may not have been placed.',
          retryable: true,
        });
      }
      return ok({ conversationId: callId });
    },

    async findDial(dial) {
      const listed = await client.request('POST', '/v3/list-calls', {
        filter_criteria: { metadata: [{ type: 'string', op: 'eq', key: dialIdKey, value: dial.dialId }] },
        sort_order: 'descending',
        limit: maxSearchResults,
      });
      if (listed.kind !== 'ok') return err(retellCallFailure(listed));
      const items = Array.isArray(listed.body) ? listed.body : record(listed.body).items;
      if (!Array.isArray(items)) {
        return err({ kind: 'uncertain', message: 'Unexpected call list from the voice provider.', retryable: true });
      }
      // Each item is checked for the dial id too: a server that ignored the filter would list others.
      for (const item of items) {
        const call = record(item);
        const ofDial =
          record(call.metadata)[dialIdKey] === dial.dialId || record(call.retell_llm_dynamic_variables)[dialIdKey] === dial.dialId;
        if (ofDial && typeof call.call_id === 'string' && providerCallIdRule.test(call.call_id)) {
          return ok({ state: 'found', conversationId: call.call_id });
        }
      }
      return ok({ state: 'not_found' });
    },

    // `POST /v2/stop-call/{id}` (no body, 204) hangs up an ongoing call and ends a ringing one; the call
    // then ends as usual, `manual_stopped`. A refusal (their 4xx for a call that is no longer ongoing) is
    // read as "over already": the caller reads the call to tell.
    async cancel(call) {
      const response = await client.request('POST', `/v2/stop-call/${encodeURIComponent(call.conversationId)}`);
      if (response.kind === 'ok') return ok({ state: 'ending' });
      if (response.kind === 'http_error' && [400, 404, 409, 422].includes(response.status)) return ok({ state: 'already_ended' });
      return err(cancelRequestFailure(response));
    },

    async fetchRecording(_call, source) {
      // Retell gives a URL (its recording_url); its API serves no audio.
      return recordingFromSource(client.recording, source, null);
    },

    async checkCall(call) {
      const now = clock.now();
      const response = await client.request('GET', `/v2/get-call/${encodeURIComponent(call.conversationId)}`);
      if (response.kind === 'ok') return ok(retellCheck(response.body, now, call.createdAt));
      if (isPastGiveUp(now, call.createdAt)) return ok(givenUp(now));
      // Retell answers 422 for an id it does not know (yet): look again later.
      if (response.kind === 'http_error' && (response.status === 422 || response.status === 404))
        return ok(checkLater(now, call.createdAt));
      return err(retellCallFailure(response));
    },
  };
}
