/**
 * Vapi under the provider contract, over the fake of its API: the dial id rides as the customer's
 * `externalId`, outcomes come as `status-update` messages then the `end-of-call-report`, signed `x-signature`
 * over `<x-timestamp>.<body>` with the server credential's secret (5 minutes' tolerance), a silent call is
 * read by `GET /call/{id}`, and assistants are listed by `createdAtLt`.
 */
import type { FailureReason } from '../../../src/features/providers/provider.interface.js';
import { startFakeVapi, type FakeVapi, type VapiEnd } from '../fake-vapi.js';
import type { ContractAgent, ContractFakeContext, ContractOutcome, ProviderContractFake } from '../provider-contract.js';
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

/** How Vapi records a call that ended so. */
function vapiEnd(outcome: ContractOutcome): VapiEnd {
  if (outcome.status === 'completed') {
    const endedAtMs = outcome.startedAt.getTime() + outcome.durationSeconds * 1000;
    return {
      endedReason: 'customer-ended-call',
      startedAt: outcome.startedAt.toISOString(),
      endedAt: new Date(endedAtMs).toISOString(),
      summary: outcome.summary,
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
  return {
    provider: 'vapi',
    failureReasons: ['busy', 'no_answer', 'voicemail', 'rejected', 'provider_error'],
    webhookToleranceMs: 5 * 60_000,
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
      return [...earlier, fake.statusUpdate(call, 'ended'), fake.endOfCallReport(call)].map((body) => ({
        headers: fake.signedHeaders(body, timestampMs, forged ? 'not-the-credential-secret' : undefined),
        body,
      }));
    },
    endCallForLookup: (callId, outcome) => void fake.endCall(callId, vapiEnd(outcome)),
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
    close: () => fake.close(),
  };
}
