/**
 * ElevenLabs under the provider contract, over the fake of its API: the dial id rides as the conversation's
 * `user_id`, outcomes come as `post_call_transcription` (then `post_call_audio`) or `call_initiation_failure`
 * signed `ElevenLabs-Signature: t=<s>,v0=<hex>` with the workspace's webhook secret (30 minutes' tolerance),
 * a silent call is read by GET conversation, its recording by GET conversation audio with the API key, and
 * agents are listed by cursor. A conversation's `transcript`, `analysis` and `has_audio` are the same in its
 * transcription webhook and in GET conversation.
 */
import { signElevenLabs } from '../../../src/features/providers/elevenlabs/elevenlabs.signature.js';
import type { FailureReason } from '../../../src/features/providers/provider.interface.js';
import {
  apiKey,
  initiationFailureEvent,
  transcriptionEvent,
  webhookSecret,
  workspaceAgents,
  workspaceNumber,
} from '../elevenlabs-fixtures.js';
import { startFakeElevenLabs, type ConversationEnd, type FakeConversation, type FakeElevenLabs } from '../fake-elevenlabs.js';
import { carriesCredential, recordingOutage } from '../fake-provider-server.js';
import {
  vendorData,
  type CompletedOutcome,
  type ContractAgent,
  type ContractContent,
  type ContractFakeContext,
  type ContractOutcome,
  type ProviderContractFake,
  type SignedWebhook,
} from '../provider-contract.js';

const agent = {
  providerAgentId: 'agent_el_contract',
  name: 'Contract agent',
  number: { id: 'phnum_contract_1', e164: '+14155550100' },
} as const;
const contractNumber = () => workspaceNumber('twilio', agent.number.id, agent.number.e164, 'Main');

/** Their `failure_reason` of a call_initiation_failure. */
const initiationReasons: Partial<Record<FailureReason, string>> = { busy: 'busy', no_answer: 'no-answer', unknown: 'unknown' };
/** A failed conversation's error as their telephony words it, which a look-up reads (it has no failure_reason). */
const lookupErrors: Partial<Record<FailureReason, string>> = { busy: 'User busy', no_answer: 'no-answer' };
/** Their voicemail detection ends a conversation that was answered: it is `done`, its termination says so. */
const voicemailTermination = 'Voicemail detected';

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** Their transcript of the turns, with a turn that only calls a tool (no message) after the first: no turn of ours. */
function transcriptOf(content: ContractContent): Record<string, unknown>[] {
  const items: Record<string, unknown>[] = content.turns.map((turn) => ({
    role: turn.role,
    message: turn.text,
    time_in_call_secs: turn.offsetSeconds,
    tool_calls: null,
    tool_results: null,
    feedback: null,
    conversation_turn_metrics: null,
  }));
  if (items.length === 0) return items;
  const toolCall = {
    role: 'agent',
    message: null,
    time_in_call_secs: content.turns[0]!.offsetSeconds,
    tool_calls: [{ request_id: 'toolu_1', tool_name: 'check_calendar', params_as_json: '{"day":"tomorrow"}', tool_has_been_called: true }],
    tool_results: [{ request_id: 'toolu_1', tool_name: 'check_calendar', result_value: '{"free":["14:00"]}', is_error: false }],
    feedback: null,
  };
  return [items[0]!, toolCall, ...items.slice(1)];
}

/** Their `analysis` (less the summary): the judgement, an evaluation criterion (not data), each result with its rationale. */
function theirAnalysis(content: ContractContent, withResults = true): Record<string, unknown> {
  const results = Object.entries(vendorData(content)).map(([id, value]) => [
    id,
    {
      data_collection_id: id,
      value,
      json_schema: { type: value === null ? 'string' : typeof value, description: `The ${id}.` },
      rationale: 'Said in the call.',
    },
  ]);
  return {
    call_successful: content.successful === null ? 'unknown' : content.successful ? 'success' : 'failure',
    evaluation_criteria_results: { booked: { criteria_id: 'booked', result: 'success', rationale: 'The user agreed to a time.' } },
    ...(withResults ? { data_collection_results: Object.fromEntries(results) } : {}),
  };
}

/** A conversation that took place (or reached voicemail), or undefined for one that never connected. */
function doneConversation(outcome: ContractOutcome): Extract<ConversationEnd, { status: 'done' }> | undefined {
  if (outcome.status === 'completed') {
    const { content } = outcome;
    return {
      status: 'done',
      startSecs: seconds(outcome.startedAt),
      durationSecs: outcome.durationSeconds,
      summary: outcome.summary,
      transcript: transcriptOf(content),
      analysis: theirAnalysis(content),
      audio: content.recording,
    };
  }
  if (outcome.reason !== 'voicemail') return undefined;
  return {
    status: 'done',
    startSecs: seconds(outcome.failedAt) - 10,
    durationSecs: 10,
    summary: '',
    terminationReason: voicemailTermination,
  };
}

function failedOf(outcome: ContractOutcome): Extract<ContractOutcome, { status: 'failed' }> {
  if (outcome.status !== 'failed') throw new Error('a completed call is a done conversation');
  return outcome;
}

function initiationReasonOf(reason: FailureReason): string {
  const theirs = initiationReasons[reason];
  if (!theirs) throw new Error(`ElevenLabs reports no initiation failure ${reason}`);
  return theirs;
}

/** A done conversation of a completed call. */
function completedConversation(outcome: CompletedOutcome): Extract<ConversationEnd, { status: 'done' }> {
  const done = doneConversation(outcome);
  if (!done) throw new Error('a completed call is a done conversation');
  return done;
}

/**
 * The post-call webhooks ElevenLabs sends for a conversation that ended so; a done one's transcript,
 * analysis and audio as `conversation` (GET conversation) has them.
 */
function eventsFor(conversationId: string, outcome: ContractOutcome, conversation: FakeConversation, audio: Buffer | undefined) {
  const done = doneConversation(outcome);
  if (done) {
    const transcription = transcriptionEvent(conversationId, done);
    const data = transcription.data as Record<string, unknown> & { metadata: Record<string, unknown> };
    if (done.terminationReason) data.metadata.termination_reason = done.terminationReason;
    for (const field of ['transcript', 'analysis', 'has_audio', 'has_user_audio', 'has_response_audio']) data[field] = conversation[field];
    if (!audio) return [transcription];
    const audioEvent = {
      type: 'post_call_audio',
      event_timestamp: transcription.event_timestamp,
      data: { agent_id: agent.providerAgentId, conversation_id: conversationId, full_audio: audio.toString('base64') },
    };
    return [transcription, audioEvent];
  }
  const { reason, failedAt } = failedOf(outcome);
  return [initiationFailureEvent(conversationId, initiationReasonOf(reason), 'twilio', seconds(failedAt))];
}

/** How GET conversation answers a conversation that ended so; only what a look-up can tell apart. */
function lookedUpEnd(outcome: ContractOutcome): ConversationEnd {
  const done = doneConversation(outcome);
  if (done) return done;
  const { reason } = failedOf(outcome);
  const errorReason = lookupErrors[reason];
  if (!errorReason) throw new Error(`a look-up at ElevenLabs cannot tell ${reason}`);
  return { status: 'failed', errorReason };
}

export async function startElevenLabsContract(context: ContractFakeContext): Promise<ProviderContractFake> {
  const fake: FakeElevenLabs = await startFakeElevenLabs({ apiKey, now: context.now });
  fake.phoneNumbers = [contractNumber()];
  const outage = recordingOutage(fake, (request) => request.route === 'audio', { detail: 'Service Unavailable' });
  const sign = (payload: unknown, timestampMs: number, forged: boolean): SignedWebhook => {
    const body = JSON.stringify(payload);
    const secret = forged ? 'wsec_not_the_workspace_secret' : webhookSecret;
    const signature = signElevenLabs(secret, Math.floor(timestampMs / 1000), body);
    return { headers: { 'content-type': 'application/json', 'elevenlabs-signature': signature }, body };
  };
  return {
    provider: 'elevenlabs',
    failureReasons: ['busy', 'no_answer', 'voicemail', 'unknown'],
    webhookToleranceMs: 30 * 60_000,
    recordingContentType: 'audio/mpeg',
    recordingByUrl: false,
    env: () => ({ ELEVENLABS_API_KEY: apiKey, ELEVENLABS_WEBHOOK_SECRET: webhookSecret, ELEVENLABS_BASE_URL: fake.url }),
    agent: () => agent,
    createRequests: () => fake.requestsTo('outbound'),
    dialIdOf: (create) =>
      (create.body as { conversation_initiation_client_data?: { user_id?: unknown } }).conversation_initiation_client_data?.user_id,
    placedCallId: () => {
      const id = [...fake.conversations.keys()].at(-1);
      if (!id) throw new Error('the fake ElevenLabs placed no conversation');
      return id;
    },
    webhooksFor(conversationId, outcome, { timestampMs, forged = false }) {
      // Its conversation then reads as failed, in their telephony's words for the reason.
      const end = doneConversation(outcome) ?? { status: 'failed', errorReason: initiationReasonOf(failedOf(outcome).reason) };
      const conversation = fake.endConversation(conversationId, end);
      const events = eventsFor(conversationId, outcome, conversation, fake.audio.get(conversationId)?.bytes);
      return events.map((event) => sign(event, timestampMs, forged));
    },
    endCallForLookup: (conversationId, outcome) => void fake.endConversation(conversationId, lookedUpEnd(outcome)),
    endBeforeAnalysis(conversationId, outcome) {
      // Done, transcript and audio there, the analysis not finished: no judgement yet, no results.
      const done = completedConversation(outcome);
      fake.endConversation(conversationId, { ...done, analysis: theirAnalysis({ ...outcome.content, successful: null }, false) });
      return [];
    },
    analysisWebhooks(conversationId, outcome, { timestampMs }) {
      const conversation = fake.endConversation(conversationId, completedConversation(outcome));
      return eventsFor(conversationId, outcome, conversation, undefined).map((event) => sign(event, timestampMs, false));
    },
    recordingRequests: (conversationId) =>
      fake
        .requestsTo('audio')
        .filter((request) => request.path === `/v1/convai/conversations/${conversationId}/audio`)
        .map((request) => ({ credential: carriesCredential(request) })),
    recordingSourceDown: (how) => outage.down(how),
    recordingSourceUp: () => outage.up(),
    lookupsOf: (conversationId) =>
      fake.requestsTo('conversation').filter((request) => request.path === `/v1/convai/conversations/${conversationId}`).length,
    loseNextCreateAnswer: ({ placed }) =>
      placed ? fake.loseNextAnswer('outbound') : fake.queue('outbound', { status: 200, destroy: true }),
    seedWorkspace({ agents: count, pageSize }) {
      const others = workspaceAgents(count - 1);
      fake.agents = [{ agent_id: agent.providerAgentId, name: agent.name }, ...others];
      fake.agentsPageSize = pageSize;
      const seeded: ContractAgent[] = [
        agent,
        ...others.map((other, index) => ({
          providerAgentId: other.agent_id,
          name: other.name,
          number: index === others.length - 1 ? null : { id: `phnum_seeded_${index + 1}`, e164: `+1415555030${index}` },
        })),
      ];
      fake.phoneNumbers = seeded.flatMap((seededAgent) =>
        seededAgent.number
          ? [
              workspaceNumber('twilio', seededAgent.number.id, seededAgent.number.e164, seededAgent.name, {
                agent_id: seededAgent.providerAgentId,
                name: seededAgent.name,
              }),
            ]
          : [],
      );
      return seeded;
    },
    agentPagesServed: () => fake.requestsTo('agents').length,
    requestCount: () => fake.requests.length,
    // Their API has no hang-up (the end-call command is an Enterprise monitoring socket's).
    cancel: null,
    close: () => fake.close(),
  };
}
