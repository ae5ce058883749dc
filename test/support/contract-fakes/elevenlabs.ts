/**
 * ElevenLabs under the provider contract, over the fake of its API: the dial id rides as the conversation's
 * `user_id`, outcomes come as `post_call_transcription` (then `post_call_audio`) or `call_initiation_failure`
 * signed `ElevenLabs-Signature: t=<s>,v0=<hex>` with the workspace's webhook secret (30 minutes' tolerance),
 * a silent call is read by GET conversation, and agents are listed by cursor.
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
import { startFakeElevenLabs, type ConversationEnd, type FakeElevenLabs } from '../fake-elevenlabs.js';
import type { ContractAgent, ContractFakeContext, ContractOutcome, ProviderContractFake, SignedWebhook } from '../provider-contract.js';

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

/** A conversation that took place (or reached voicemail), or undefined for one that never connected. */
function doneConversation(outcome: ContractOutcome): Extract<ConversationEnd, { status: 'done' }> | undefined {
  if (outcome.status === 'completed') {
    return { status: 'done', startSecs: seconds(outcome.startedAt), durationSecs: outcome.durationSeconds, summary: outcome.summary };
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

/** The post-call webhooks ElevenLabs sends for a conversation that ended so. */
function eventsFor(conversationId: string, outcome: ContractOutcome): Record<string, unknown>[] {
  const done = doneConversation(outcome);
  if (done) {
    const transcription = transcriptionEvent(conversationId, done);
    const data = transcription.data as { metadata: Record<string, unknown> };
    if (done.terminationReason) data.metadata.termination_reason = done.terminationReason;
    const audio = {
      type: 'post_call_audio',
      event_timestamp: transcription.event_timestamp,
      data: { agent_id: agent.providerAgentId, conversation_id: conversationId, full_audio: Buffer.alloc(64, 7).toString('base64') },
    };
    return [transcription, audio];
  }
  const { reason, failedAt } = failedOf(outcome);
  const theirs = initiationReasons[reason];
  if (!theirs) throw new Error(`ElevenLabs reports no initiation failure ${reason}`);
  return [initiationFailureEvent(conversationId, theirs, 'twilio', seconds(failedAt))];
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
      const events = eventsFor(conversationId, outcome);
      // Its conversation then reads as failed, in their telephony's words for the reason (eventsFor knew them).
      const end = doneConversation(outcome) ?? { status: 'failed', errorReason: initiationReasons[failedOf(outcome).reason]! };
      fake.endConversation(conversationId, end);
      return events.map((event) => sign(event, timestampMs, forged));
    },
    endCallForLookup: (conversationId, outcome) => void fake.endConversation(conversationId, lookedUpEnd(outcome)),
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
    close: () => fake.close(),
  };
}
