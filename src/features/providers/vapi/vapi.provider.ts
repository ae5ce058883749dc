/**
 * Real calls through Vapi. A call is `POST /call` with the agent's assistant and phone number; metadata
 * travels as `assistantOverrides.variableValues`, and callgate's dial id as `customer.externalId` and
 * `assistantOverrides.metadata.callgate_dial_id` (Vapi keeps no call-level metadata). Outcomes arrive as
 * server messages (`end-of-call-report`); for calls that stay silent, `checkCall` asks `GET /call/{id}`
 * (reconciliation) and gives up after 24 hours.
 */
import { recordingFromSource } from '../recording-fetch.js';
import type { Clock } from '../../../lib/clock.js';
import { err, ok } from '../../../lib/result.js';
import { checkLater, dialIdKey, givenUp, isPastGiveUp, searchMarginMs } from '../provider-checks.js';
import {
  callRequestFailure,
  cancelRequestFailure,
  concurrencyFailure,
  record,
  type ProviderErrorResponse,
  type ProviderHttpClient,
} from '../provider-http.js';
import type { ProviderFailure, VoiceProvider } from '../provider.interface.js';
import { providerCallIdRule } from '../provider-checks.js';
import { vapiOutcome } from './vapi.mapping.js';

const searchLimit = 100;

function refusal(status: number): string {
  if (status === 400) return 'The voice provider rejected the call request as invalid.';
  if (status === 402) return 'The voice provider refused the call: its account cannot pay for calls; the operator must check it.';
  if (status === 404) return "The voice provider does not know this agent's assistant or phone number.";
  return `The voice provider refused the call (HTTP ${status}).`;
}

export function vapiCallFailure(response: ProviderErrorResponse): ProviderFailure {
  return callRequestFailure(response, refusal);
}

/** Whether a call of theirs carries the dial id: as its customer's externalId, or in the overrides' metadata. */
function isCallOfDial(value: unknown, dialId: string): boolean {
  const call = record(value);
  return record(call.customer).externalId === dialId || record(record(call.assistantOverrides).metadata)[dialIdKey] === dialId;
}

/** The call's `monitor.controlUrl`, when it is an http(s) URL. */
function controlUrlOf(call: Record<string, unknown>): string | null {
  const url = record(call.monitor).controlUrl;
  if (typeof url !== 'string' || url.length > 2_000) return null;
  return /^https?:\/\/[^\s]+$/i.test(url) ? url : null;
}

export function createVapiProvider(options: { client: ProviderHttpClient; clock: Clock; reconcileAfterMs: number }): VoiceProvider {
  const { client, clock } = options;
  return {
    name: 'vapi',
    firstCheckDelayMs: options.reconcileAfterMs,

    async placeCall(request) {
      if (!request.phoneNumberId) {
        return err({
          kind: 'rejected',
          message: 'The agent has no phone number to call from; the operator must set one.',
          retryable: false,
        });
      }
      const body = {
        assistantId: request.agentId,
        phoneNumberId: request.phoneNumberId,
        customer: { number: request.to, externalId: request.dialId },
        assistantOverrides: {
          variableValues: { ...request.metadata, [dialIdKey]: request.dialId },
          metadata: { [dialIdKey]: request.dialId },
        },
      };
      const response = await client.request('POST', '/call', body);
      if (response.kind !== 'ok') return err(vapiCallFailure(response));
      const call = record(response.body);
      // At the account's concurrency limit the call is created but never connects: nobody is dialed.
      if (record(call.subscriptionLimits).concurrencyBlocked === true) return err(concurrencyFailure());
      if (typeof call.id !== 'string' || !providerCallIdRule.test(call.id)) {
        return err({
          kind: 'uncertain',
          message: 'The voice provider answered without a call id callgate can read. The call may or may not have been placed.',
          retryable: true,
        });
      }
      return ok({ conversationId: call.id, control: controlUrlOf(call) });
    },

    async findDial(dial) {
      // Their list filters by assistant and creation time, not by our id: each call is matched here.
      const query = new URLSearchParams({
        assistantId: dial.agentId,
        createdAtGe: new Date(dial.askedAt.getTime() - searchMarginMs).toISOString(),
        limit: String(searchLimit),
      });
      const listed = await client.request('GET', `/call?${query.toString()}`);
      if (listed.kind !== 'ok') return err(vapiCallFailure(listed));
      if (!Array.isArray(listed.body)) {
        return err({ kind: 'uncertain', message: 'Unexpected call list from the voice provider.', retryable: true });
      }
      const found = listed.body.find((call) => isCallOfDial(call, dial.dialId));
      const id = record(found).id;
      return ok(typeof id === 'string' && providerCallIdRule.test(id) ? { state: 'found', conversationId: id } : { state: 'not_found' });
    },

    // `{"type":"end-call"}` to the call's `monitor.controlUrl` (kept from the create answer, or read from the
    // call when its answer was lost) ends it, ringing or live; the call then ends as usual.
    async cancel(call) {
      let controlUrl = call.control;
      if (controlUrl === null) {
        const read = await client.request('GET', `/call/${encodeURIComponent(call.conversationId)}`);
        if (read.kind !== 'ok') return err(cancelRequestFailure(read));
        if (record(read.body).status === 'ended') return ok({ state: 'already_ended' });
        controlUrl = controlUrlOf(record(read.body));
        if (controlUrl === null) {
          return err({
            kind: 'rejected',
            message:
              "The voice provider gave no control URL for this call (its assistant's monitorPlan.controlEnabled may be off), so it cannot be ended through callgate.",
            retryable: false,
          });
        }
      }
      const response = await client.postTo(controlUrl, { type: 'end-call' });
      if (response.kind === 'ok') return ok({ state: 'ending' });
      // The control URL lives as long as the call: a 4xx for it means the call is over.
      if (response.kind === 'http_error' && [400, 404, 409, 410, 422].includes(response.status)) return ok({ state: 'already_ended' });
      return err(cancelRequestFailure(response));
    },

    async fetchRecording(_call, source) {
      // Vapi gives a URL (artifact.recordingUrl); its API serves no audio.
      return recordingFromSource(client.recording, source, null);
    },

    async checkCall(call) {
      const now = clock.now();
      const response = await client.request('GET', `/call/${encodeURIComponent(call.conversationId)}`);
      if (response.kind === 'ok') {
        if (record(response.body).status === 'ended') return ok({ state: 'ended', outcome: vapiOutcome(response.body, now) });
        return ok(isPastGiveUp(now, call.createdAt) ? givenUp(now) : checkLater(now, call.createdAt));
      }
      if (isPastGiveUp(now, call.createdAt)) return ok(givenUp(now));
      // Their own gateway notes a call read too soon may not be there yet: look again later.
      if (response.kind === 'http_error' && response.status === 404) return ok(checkLater(now, call.createdAt));
      return err(vapiCallFailure(response));
    },
  };
}
