/**
 * Retell under the provider contract, over the fake of its API: the dial id rides in the call's `metadata`
 * (which `POST /v3/list-calls` filters by), outcomes come as `call_started`, `call_ended` and `call_analyzed`
 * signed `x-retell-signature` with the API key (5 minutes' tolerance), a silent call is read by
 * `GET /v2/get-call`, and agents and numbers are listed by pagination key. An answered call's
 * `transcript_object` and `recording_url` come with call_ended, its `call_analysis` with call_analyzed; the
 * recording is a public URL on the fake's own server. A call is ended by `POST /v2/stop-call/{call_id}` and
 * then reported `manual_stopped`, `not_connected` when nobody had answered.
 */
import type { FailureReason } from '../../../src/features/providers/provider.interface.js';
import { carriesCredential, recordingOutage } from '../fake-provider-server.js';
import { startFakeRetell, type FakeRetell, type RetellEnd, type RetellNumber, type RetellTurn } from '../fake-retell.js';
import {
  vendorData,
  type ContractAgent,
  type ContractFakeContext,
  type ContractOutcome,
  type ContractTurn,
  type ProviderContractFake,
  type SignedWebhook,
} from '../provider-contract.js';
import { fillWorkspaces, retellAgentId, retellKey, retellNumber } from '../retell-vapi-fixtures.js';

const agent = {
  providerAgentId: retellAgentId,
  name: 'Retell reminders',
  number: { id: retellNumber, e164: retellNumber },
} as const;

/** Their call status and disconnection reason for each failure reason they can say. */
const failures: Partial<Record<FailureReason, { status: RetellEnd['status']; reason: string }>> = {
  busy: { status: 'not_connected', reason: 'dial_busy' },
  no_answer: { status: 'not_connected', reason: 'dial_no_answer' },
  voicemail: { status: 'ended', reason: 'voicemail_reached' },
  rejected: { status: 'not_connected', reason: 'user_declined' },
  provider_error: { status: 'not_connected', reason: 'dial_failed' },
};

/** A turn as their `transcript_object` has it: each word timed from the turn's offset (none without one). */
function retellTurn(turn: ContractTurn): RetellTurn {
  const start = turn.offsetSeconds;
  const words =
    start === null
      ? []
      : turn.text.split(' ').map((word, index) => ({ word, start: start + index * 0.25, end: start + index * 0.25 + 0.2 }));
  return { role: turn.role, content: turn.text, words };
}

/** How Retell records a call that ended so; `analysed` false for one whose analysis is not done yet. */
function retellEnd(outcome: ContractOutcome, analysed = true): RetellEnd {
  if (outcome.status === 'completed') {
    const { content } = outcome;
    return {
      status: 'ended',
      reason: 'user_hangup',
      startMs: outcome.startedAt.getTime(),
      durationMs: outcome.durationSeconds * 1000,
      // Beside their defaults, not data: user_sentiment, in_voicemail; no judgement leaves call_successful out.
      analysis: analysed
        ? { call_summary: outcome.summary, call_successful: content.successful ?? undefined, custom_analysis_data: vendorData(content) }
        : null,
      transcriptObject: content.turns.map(retellTurn),
      recording: content.recording,
    };
  }
  const failure = failures[outcome.reason];
  if (!failure) throw new Error(`Retell has no way to say ${outcome.reason}`);
  // An answered call (voicemail) ends at its start plus its duration; one never answered when it gave up.
  const durationMs = failure.status === 'ended' ? 5_000 : 0;
  return { ...failure, startMs: outcome.failedAt.getTime() - durationMs, durationMs, endMs: outcome.failedAt.getTime(), analysis: {} };
}

const boundTo = (agentId: string): Partial<RetellNumber> => ({ outbound_agents: [{ agent_id: agentId, agent_version: 1, weight: 1 }] });

export async function startRetellContract(_context: ContractFakeContext): Promise<ProviderContractFake> {
  const fake: FakeRetell = await startFakeRetell({ apiKey: retellKey });
  fillWorkspaces(fake, undefined);
  const outage = recordingOutage(fake, (request) => request.route === 'recording', { status: 'error', message: 'Internal Server Error' });
  const signed = (bodies: string[], timestampMs: number, forged = false): SignedWebhook[] =>
    bodies.map((body) => ({
      headers: {
        'content-type': 'application/json',
        'x-retell-signature': fake.sign(body, timestampMs, forged ? 'key_not_the_workspace_key' : undefined),
      },
      body,
    }));
  return {
    provider: 'retell',
    failureReasons: ['busy', 'no_answer', 'voicemail', 'rejected', 'provider_error'],
    webhookToleranceMs: 5 * 60_000,
    recordingContentType: 'audio/wav',
    recordingByUrl: true,
    env: () => ({ RETELL_API_KEY: retellKey, RETELL_BASE_URL: fake.url }),
    agent: () => agent,
    createRequests: () => fake.requestsTo('create'),
    dialIdOf: (create) => (create.body as { metadata?: Record<string, unknown> }).metadata?.callgate_dial_id,
    placedCallId: () => {
      const id = [...fake.calls.keys()].at(-1);
      if (!id) throw new Error('the fake Retell placed no call');
      return id;
    },
    webhooksFor(callId, outcome, { timestampMs, forged = false }) {
      const before = structuredClone(fake.calls.get(callId));
      const call = fake.endCall(callId, retellEnd(outcome));
      const events = outcome.status === 'completed' && before ? [fake.webhookBody('call_started', before)] : [];
      events.push(fake.webhookBody('call_ended', call), fake.webhookBody('call_analyzed', call));
      return signed(events, timestampMs, forged);
    },
    endCallForLookup: (callId, outcome) => void fake.endCall(callId, retellEnd(outcome)),
    endBeforeAnalysis(callId, outcome) {
      // Its call_ended lost: only a look-up, which finds no call_analysis, says it ended.
      fake.endCall(callId, retellEnd(outcome, false));
      return [];
    },
    analysisWebhooks: (callId, outcome, { timestampMs }) =>
      signed([fake.webhookBody('call_analyzed', fake.endCall(callId, retellEnd(outcome)))], timestampMs),
    recordingRequests: (callId) =>
      fake
        .requestsTo('recording')
        .filter((request) => request.path === `/recordings/${callId}.wav`)
        .map((request) => ({ credential: carriesCredential(request) })),
    recordingSourceDown: (how) => outage.down(how),
    recordingSourceUp: () => outage.up(),
    lookupsOf: (callId) => fake.requestsTo('getCall').filter((request) => request.path === `/v2/get-call/${callId}`).length,
    loseNextCreateAnswer: ({ placed }) => (placed ? fake.loseNextAnswer('create') : fake.queue('create', { status: 201, destroy: true })),
    seedWorkspace({ agents: count, pageSize }) {
      fake.pageSize = pageSize;
      const seeded: ContractAgent[] = [
        agent,
        ...Array.from({ length: count - 1 }, (_, index) => ({
          providerAgentId: `agent_${String(index + 1).padStart(26, 'c')}`,
          name: `Seeded ${index + 1}`,
          number: index === count - 2 ? null : { id: `+1415555031${index}`, e164: `+1415555031${index}` },
        })),
      ];
      fake.agents = seeded.map((seededAgent) => ({
        agent_id: seededAgent.providerAgentId,
        agent_name: seededAgent.name,
        channel: 'voice',
      }));
      fake.phoneNumbers = seeded.flatMap((seededAgent) =>
        seededAgent.number
          ? [
              {
                phone_number: seededAgent.number.e164,
                phone_number_type: 'retell-twilio',
                nickname: seededAgent.name,
                ...boundTo(seededAgent.providerAgentId),
              },
            ]
          : [],
      );
      return seeded;
    },
    agentPagesServed: () => fake.requestsTo('agents').length,
    requestCount: () => fake.requests.length,
    // `POST /v2/stop-call/{call_id}`, no body, with the key; the call ends `manual_stopped`, answered or not.
    cancel: {
      stopRequests: (callId) => fake.stopsOf(callId),
      isStopRequest: (request, callId) =>
        request.method === 'POST' &&
        request.path === `/v2/stop-call/${callId}` &&
        request.body === null &&
        request.headers.authorization === `Bearer ${retellKey}`,
      answer: (callId, startedAt) => void fake.answerCall(callId, startedAt.getTime()),
      stoppedWebhooks(callId, outcome, { timestampMs }) {
        const end: RetellEnd =
          outcome.status === 'completed'
            ? { ...retellEnd(outcome), reason: 'manual_stopped' }
            : { status: 'not_connected', reason: 'manual_stopped', endMs: outcome.failedAt.getTime(), analysis: {} };
        const call = fake.endCall(callId, end);
        return signed([fake.webhookBody('call_ended', call), fake.webhookBody('call_analyzed', call)], timestampMs);
      },
    },
    close: () => fake.close(),
  };
}
