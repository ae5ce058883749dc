/**
 * Real calls through ElevenLabs Agents. Placing a call picks the Twilio or SIP-trunk endpoint by the kind
 * of the agent's phone number; metadata travels as the conversation's `dynamic_variables`. Outcomes arrive
 * by their post-call webhooks; for calls that stay silent, `checkCall` asks for the conversation
 * (reconciliation) and gives up after 24 hours.
 */
import { recordingFromSource } from '../recording-fetch.js';
import type { Clock } from '../../../lib/clock.js';
import { err, ok } from '../../../lib/result.js';
import { checkLater, dialIdKey, givenUp, isPastGiveUp } from '../provider-checks.js';
import { record, type ProviderHttpClient as ElevenLabsClient } from '../provider-http.js';
import type { CallCheck, DirectoryPhoneNumber, PlaceCallRequest, ProviderFailure, VoiceProvider } from '../provider.interface.js';
import { phoneNumbersOf } from './elevenlabs.directory.js';
import { completedOutcome, failedConversationOutcome, placeCallFailure } from './elevenlabs.mapping.js';

/** Phone-number kinds are looked up at most this often (agents added by hand do not know theirs). */
const phoneNumberCacheMs = 5 * 60_000;

/** The dynamic variable that carries callgate's dial id (besides `user_id`); a metadata key of that name is replaced. */
export const dialIdVariable = dialIdKey;
const conversationIdRule = /^[A-Za-z0-9_-]{1,128}$/;
/** A search starts this long before the dial was sent (clocks differ), and reads at most this many candidates. */
const searchMarginSeconds = 60;
const searchPageSize = 30;
const maxCandidates = 30;

/** Whether a conversation's detail carries the dial id: as its user_id, or as the dynamic variable. */
function isConversationOfDial(conversation: unknown, dialId: string): boolean {
  const data = record(conversation);
  const clientData = record(data.conversation_initiation_client_data);
  return data.user_id === dialId || clientData.user_id === dialId || record(clientData.dynamic_variables)[dialIdVariable] === dialId;
}

const outboundPaths: Record<string, string> = {
  twilio: '/v1/convai/twilio/outbound-call',
  sip_trunk: '/v1/convai/sip-trunk/outbound-call',
};

/** The workspace's numbers, for their kinds; failures are worded for a call's integrator. */
async function listPhoneNumbers(client: ElevenLabsClient): Promise<DirectoryPhoneNumber[] | ProviderFailure> {
  const response = await client.request('GET', '/v1/convai/phone-numbers');
  if (response.kind !== 'ok') return placeCallFailure(response);
  return (
    phoneNumbersOf(response.body) ?? {
      kind: 'unavailable',
      message: 'Unexpected phone-number list from the voice provider.',
      retryable: true,
    }
  );
}

export const elevenLabsCannotCancel =
  "ElevenLabs offers no way to end a call through its API (its end-call command is an Enterprise-only monitoring socket), so callgate cannot stop this call; it ends when the conversation does. To stop calls to come, cancel their batch or add the number to the suppression list; to end a live call, use the agent's own end-call tool or the telephony provider's console.";

export function createElevenLabsProvider(options: { client: ElevenLabsClient; clock: Clock; reconcileAfterMs: number }): VoiceProvider {
  const { client, clock } = options;
  let phoneKinds: { at: number; kinds: Map<string, string> } | undefined;

  async function phoneNumberKind(request: PlaceCallRequest): Promise<string | ProviderFailure> {
    if (request.phoneNumberProvider) return request.phoneNumberProvider;
    const id = request.phoneNumberId ?? '';
    if (!phoneKinds || clock.now().getTime() - phoneKinds.at > phoneNumberCacheMs || !phoneKinds.kinds.has(id)) {
      const numbers = await listPhoneNumbers(client);
      if (!Array.isArray(numbers)) return numbers;
      phoneKinds = { at: clock.now().getTime(), kinds: new Map(numbers.map((n) => [n.id, n.kind])) };
    }
    return (
      phoneKinds.kinds.get(id) ?? {
        kind: 'rejected',
        message: "The voice provider does not know the agent's phone number.",
        retryable: false,
      }
    );
  }

  return {
    name: 'elevenlabs',
    firstCheckDelayMs: options.reconcileAfterMs,
    // Their API has no hang-up: the end-call command is on a monitoring socket for Enterprise workspaces only.
    cancel: { reason: elevenLabsCannotCancel },

    async placeCall(request) {
      if (!request.phoneNumberId) {
        return err({
          kind: 'rejected',
          message: 'The agent has no phone number to call from; the operator must assign one.',
          retryable: false,
        });
      }
      const kind = await phoneNumberKind(request);
      if (typeof kind !== 'string') return err(kind);
      const path = outboundPaths[kind];
      if (!path) {
        return err({
          kind: 'rejected',
          message: `The agent's phone number is of a kind (${kind}) that cannot place outbound calls here.`,
          retryable: false,
        });
      }
      // ElevenLabs reserves `system__` dynamic variables for its own (caller id, call sid, …); refusing here
      // names the key, where their refusal would not, and no call is attempted.
      const reserved = Object.keys(request.metadata ?? {}).find((key) => key.startsWith('system__'));
      if (reserved !== undefined) {
        return err({
          kind: 'rejected',
          message: `The metadata key "${reserved}" cannot be passed to this agent: ElevenLabs reserves the system__ prefix for its own dynamic variables. Rename the key.`,
          retryable: false,
        });
      }
      // The dial id travels as the conversation's user_id (which the conversation list filters by) and as a
      // dynamic variable (kept in the conversation's detail), so a dial whose answer is lost can be found.
      const body: Record<string, unknown> = {
        agent_id: request.agentId,
        agent_phone_number_id: request.phoneNumberId,
        to_number: request.to,
        conversation_initiation_client_data: {
          user_id: request.dialId,
          dynamic_variables: { ...request.metadata, [dialIdVariable]: request.dialId },
        },
      };
      const response = await client.request('POST', path, body);
      if (response.kind !== 'ok') return err(placeCallFailure(response));
      const answer = record(response.body);
      if (answer.success === false) {
        return err({ kind: 'rejected', message: 'The voice provider did not start the call.', retryable: false });
      }
      const conversationId = answer.conversation_id;
      if (typeof conversationId !== 'string' || !conversationIdRule.test(conversationId)) {
        return err({
          kind: 'uncertain',
          message: 'The voice provider answered without a conversation id callgate can read. The call may or may not have been placed.',
          retryable: true,
        });
      }
      return ok({ conversationId });
    },

    async findDial(dial) {
      // Conversations of the agent that started around the dial, by its user_id. Each candidate's detail
      // is checked for the dial id too: a server that ignored the filter would list others.
      const startedAfter = Math.floor(dial.askedAt.getTime() / 1000) - searchMarginSeconds;
      const query = new URLSearchParams({
        agent_id: dial.agentId,
        user_id: dial.dialId,
        call_start_after_unix: String(startedAfter),
        page_size: String(searchPageSize),
      });
      const listed = await client.request('GET', `/v1/convai/conversations?${query}`);
      if (listed.kind !== 'ok') return err(placeCallFailure(listed));
      const conversations = record(listed.body).conversations;
      if (!Array.isArray(conversations)) {
        return err({ kind: 'uncertain', message: 'Unexpected conversation list from the voice provider.', retryable: true });
      }
      const candidates = conversations
        .map((item) => record(item).conversation_id)
        .filter((id): id is string => typeof id === 'string' && conversationIdRule.test(id))
        .slice(0, maxCandidates);
      for (const conversationId of candidates) {
        const detail = await client.request('GET', `/v1/convai/conversations/${encodeURIComponent(conversationId)}`);
        if (detail.kind !== 'ok') {
          if (detail.kind === 'http_error' && detail.status === 404) continue;
          return err(placeCallFailure(detail));
        }
        if (isConversationOfDial(detail.body, dial.dialId)) return ok({ state: 'found', conversationId });
      }
      return ok({ state: 'not_found' });
    },

    async fetchRecording(call, source) {
      return recordingFromSource(client.recording, source, `/v1/convai/conversations/${encodeURIComponent(call.conversationId)}/audio`);
    },

    async checkCall(call) {
      const now = clock.now();
      const pastGiveUp = isPastGiveUp(now, call.createdAt);
      const later = (): CallCheck => checkLater(now, call.createdAt);
      const response = await client.request('GET', `/v1/convai/conversations/${encodeURIComponent(call.conversationId)}`);
      if (response.kind === 'ok') {
        const status = (response.body as Record<string, unknown> | null)?.status;
        if (status === 'done') return ok({ state: 'ended', outcome: completedOutcome(response.body, now) });
        if (status === 'failed') return ok({ state: 'ended', outcome: failedConversationOutcome(response.body, now) });
        return ok(pastGiveUp ? givenUp(now) : later());
      }
      if (pastGiveUp) return ok(givenUp(now));
      if (response.kind === 'http_error' && response.status === 404) return ok(later());
      return err(placeCallFailure(response));
    },
  };
}
