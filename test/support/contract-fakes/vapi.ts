/**
 * Vapi under the provider contract, over the fake of its API: the dial id rides as the customer's
 * `externalId`, outcomes come as `status-update` messages then the `end-of-call-report`, signed `x-signature`
 * over `<x-timestamp>.<body>` with the server credential's secret (5 minutes' tolerance), a silent call is
 * read by `GET /call/{id}`, and assistants are listed by `createdAtLt`. A call's `artifact` (messages with a
 * system prompt and tool calls among them, `recordingUrl` on the fake's own server) and `analysis` come in
 * the report and in `GET /call/{id}` alike. A call is ended by `{"type":"end-call"}` to its `monitor.controlUrl`
 * and then reported `manually-canceled`, without a `startedAt` when nobody had answered.
 */
import type { FailureReason } from '../../../src/features/providers/provider.interface.js';
import { carriesCredential, recordingOutage } from '../fake-provider-server.js';
import { startFakeVapi, type FakeVapi, type VapiEnd } from '../fake-vapi.js';
import {
  vendorData,
  type ContractAgent,
  type ContractContent,
  type ContractFakeContext,
  type ContractOutcome,
  type ProviderContractFake,
  type SignedWebhook,
} from '../provider-contract.js';
import { fillWorkspaces, vapiAssistantId, vapiKey, vapiNumberId, vapiSecret } from '../retell-vapi-fixtures.js';

const agent = {
  providerAgentId: vapiAssistantId,
  name: 'Vapi reminders',
  number: { id: vapiNumberId, e164: '+14155550191' },
} as const;
/** When the contract assistant was made; the seeded ones are older, a day each. */
const agentCreatedAtMs = Date.parse('2026-05-01T10:00:00.000Z');

/** Their `endedReason` for each failure reason they can say. */
const endedReasons: Partial<Record<FailureReason, string>> = {
  busy: 'customer-busy',
  no_answer: 'customer-did-not-answer',
  voicemail: 'voicemail',
  rejected: 'vonage-rejected',
  provider_error: 'twilio-failed-to-connect-call',
};

/**
 * Their `artifact.messages` of the turns: the system prompt first, and a tool call with its result after the
 * first turn; none of those is a turn of ours.
 */
function messagesOf(content: ContractContent, startMs: number): Record<string, unknown>[] {
  const timed = (offset: number | null) => (offset === null ? {} : { time: startMs + offset * 1000, secondsFromStart: offset });
  const turns = content.turns.map((turn) => ({
    role: turn.role === 'agent' ? 'bot' : 'user',
    message: turn.text,
    ...timed(turn.offsetSeconds),
    ...(turn.offsetSeconds === null ? {} : { endTime: startMs + turn.offsetSeconds * 1000 + 1_500, duration: 1_500 }),
    source: '',
  }));
  if (turns.length === 0) return [];
  const at = content.turns[0]!.offsetSeconds ?? 0;
  const toolCalls = [{ id: 'call_tool_1', type: 'function', function: { name: 'check_calendar', arguments: '{"day":"tomorrow"}' } }];
  return [
    { role: 'system', message: 'You remind customers of their appointments.', ...timed(0) },
    turns[0]!,
    { role: 'tool_calls', toolCalls, message: '', ...timed(at) },
    { role: 'tool_call_result', name: 'check_calendar', result: '{"free":["14:00"]}', toolCallId: 'call_tool_1', ...timed(at) },
    ...turns.slice(1),
  ];
}

/** Their `analysis` beside the summary: a judgement as their rubric gives it (text or a boolean), the results. */
function analysisOf(content: ContractContent): Record<string, unknown> {
  const judgement = content.successful === null ? {} : { successEvaluation: content.successful ? 'true' : false };
  return { ...judgement, structuredData: vendorData(content) };
}

/** How Vapi records a call that ended so; `analysed` false for a report sent before its analysis. */
function vapiEnd(outcome: ContractOutcome, analysed = true): VapiEnd {
  if (outcome.status === 'completed') {
    const startMs = outcome.startedAt.getTime();
    const endedAtMs = startMs + outcome.durationSeconds * 1000;
    return {
      endedReason: 'customer-ended-call',
      startedAt: outcome.startedAt.toISOString(),
      endedAt: new Date(endedAtMs).toISOString(),
      summary: outcome.summary,
      analysis: analysed ? analysisOf(outcome.content) : {},
      messages: messagesOf(outcome.content, startMs),
      recording: outcome.content.recording,
    };
  }
  const endedReason = endedReasons[outcome.reason];
  if (!endedReason) throw new Error(`Vapi has no way to say ${outcome.reason}`);
  return { endedReason, endedAt: outcome.failedAt.toISOString() };
}

const uuidOf = (index: number) => `3b1f6c2e-9d4a-4e8b-a7c5-${String(index).padStart(12, '0')}`;

export async function startVapiContract(context: ContractFakeContext): Promise<ProviderContractFake> {
  const fake: FakeVapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret, now: context.now });
  fillWorkspaces(undefined, fake);
  const outage = recordingOutage(fake, (request) => request.route === 'recording', {
    message: 'Internal server error',
    error: 'Internal Server Error',
    statusCode: 500,
  });
  const signed = (bodies: string[], timestampMs: number, forged = false): SignedWebhook[] =>
    bodies.map((body) => ({ headers: fake.signedHeaders(body, timestampMs, forged ? 'not-the-credential-secret' : undefined), body }));
  return {
    provider: 'vapi',
    failureReasons: ['busy', 'no_answer', 'voicemail', 'rejected', 'provider_error'],
    webhookToleranceMs: 5 * 60_000,
    recordingContentType: 'audio/wav',
    recordingByUrl: true,
    env: () => ({ VAPI_API_KEY: vapiKey, VAPI_WEBHOOK_SECRET: vapiSecret, VAPI_BASE_URL: fake.url }),
    agent: () => agent,
    createRequests: () => fake.requestsTo('create'),
    dialIdOf: (create) => (create.body as { customer?: Record<string, unknown> }).customer?.externalId,
    placedCallId: () => {
      const id = [...fake.calls.keys()].at(-1);
      if (!id) throw new Error('the fake Vapi placed no call');
      return id;
    },
    webhooksFor(callId, outcome, { timestampMs, forged = false }) {
      const running = fake.calls.get(callId);
      const earlier = outcome.status === 'completed' && running ? [fake.statusUpdate(structuredClone(running), 'in-progress')] : [];
      const call = fake.endCall(callId, vapiEnd(outcome));
      return signed([...earlier, fake.statusUpdate(call, 'ended'), fake.endOfCallReport(call)], timestampMs, forged);
    },
    endCallForLookup: (callId, outcome) => void fake.endCall(callId, vapiEnd(outcome)),
    endBeforeAnalysis(callId, outcome, { timestampMs }) {
      const call = fake.endCall(callId, vapiEnd(outcome, false));
      return signed([fake.statusUpdate(call, 'ended'), fake.endOfCallReport(call)], timestampMs);
    },
    analysisWebhooks: (callId, outcome, { timestampMs }) =>
      signed([fake.endOfCallReport(fake.endCall(callId, vapiEnd(outcome)))], timestampMs),
    recordingRequests: (callId) =>
      fake
        .requestsTo('recording')
        .filter((request) => request.path === `/recordings/${callId}.wav`)
        .map((request) => ({ credential: carriesCredential(request) })),
    recordingSourceDown: (how) => outage.down(how),
    recordingSourceUp: () => outage.up(),
    lookupsOf: (callId) => fake.requestsTo('getCall').filter((request) => request.path === `/call/${callId}`).length,
    loseNextCreateAnswer: ({ placed }) => (placed ? fake.loseNextAnswer('create') : fake.queue('create', { status: 201, destroy: true })),
    seedWorkspace({ agents: count, pageSize }) {
      fake.assistantsPageSize = pageSize;
      const seeded: ContractAgent[] = [
        agent,
        ...Array.from({ length: count - 1 }, (_, index) => ({
          providerAgentId: uuidOf(index + 1),
          name: `Seeded ${index + 1}`,
          number: index === count - 2 ? null : { id: uuidOf(100 + index), e164: `+1415555032${index}` },
        })),
      ];
      fake.assistants = seeded.map((seededAgent, index) => ({
        id: seededAgent.providerAgentId,
        name: seededAgent.name,
        createdAt: new Date(agentCreatedAtMs - index * 86_400_000).toISOString(),
      }));
      fake.phoneNumbers = seeded.flatMap((seededAgent) =>
        seededAgent.number
          ? [
              {
                id: seededAgent.number.id,
                number: seededAgent.number.e164,
                provider: 'twilio',
                assistantId: seededAgent.providerAgentId,
                name: seededAgent.name,
              },
            ]
          : [],
      );
      return seeded;
    },
    agentPagesServed: () => fake.requestsTo('assistants').length,
    requestCount: () => fake.requests.length,
    // `{"type":"end-call"}` to the call's monitor.controlUrl (the fake's own server, so the key goes with it);
    // the call then ends `manually-canceled`, with a startedAt when it had been answered.
    cancel: {
      stopRequests: (callId) => fake.controlsOf(callId),
      isStopRequest: (request, callId) =>
        request.method === 'POST' &&
        `${fake.url}${request.path}` === (fake.calls.get(callId)?.monitor as { controlUrl?: string } | undefined)?.controlUrl &&
        JSON.stringify(request.body) === JSON.stringify({ type: 'end-call' }) &&
        request.headers.authorization === `Bearer ${vapiKey}`,
      answer: (callId, startedAt) => void fake.answerCall(callId, startedAt.toISOString()),
      stoppedWebhooks(callId, outcome, { timestampMs }) {
        const end: VapiEnd =
          outcome.status === 'completed'
            ? { ...vapiEnd(outcome), endedReason: 'manually-canceled' }
            : { endedReason: 'manually-canceled', endedAt: outcome.failedAt.toISOString() };
        const call = fake.endCall(callId, end);
        return signed([fake.statusUpdate(call, 'ended'), fake.endOfCallReport(call)], timestampMs);
      },
    },
    close: () => fake.close(),
  };
}
