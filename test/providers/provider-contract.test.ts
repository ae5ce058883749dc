/**
 * The provider contract: the same cases against every catalogue entry's fake (test/support/contract-fakes/),
 * through the real app on both databases. A create carries the dial id where the provider keeps it; each
 * outcome the provider can say becomes one call.completed or call.failed with the spec's data, delivered and
 * verified as a receiver verifies it; forged and stale webhooks are refused, repeated and reordered ones
 * make one event; a call whose webhook never comes is looked up and ended; a lost create answer is found
 * by its dial id or known not placed, never dialed twice; agents sync reads every page; a test key never
 * reaches the provider. A new provider gets all of it by adding its contract fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { syncAgents } from '../../src/features/agents/agents-sync.service.js';
import { listAgents } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { agentDirectoryFor, providerCatalogue } from '../../src/features/providers/provider-catalogue.js';
import { forEachDialect } from '../support/dialects.js';
import { storedNumberId, type ContractOutcome } from '../support/provider-contract.js';
import {
  completedOutcome,
  contractCall,
  contractHarness,
  contractSettings,
  type ContractHarness,
} from '../support/provider-contract-harness.js';

const dialIdRule = /^dial_[0-9a-z]{26}$/;
const failedFields = ['agent_id', 'failed_at', 'failure_message', 'failure_reason', 'id', 'metadata', 'status', 'to'];

/** The `data` of the call.* event the spec gives a call that ended so. */
function expectedData(
  h: ContractHarness,
  callId: string,
  outcome: ContractOutcome,
  sent: { to: string; metadata: unknown } = contractCall,
): Record<string, unknown> {
  if (outcome.status === 'completed') {
    return {
      id: callId,
      agent_id: h.agentId,
      status: 'completed',
      duration_seconds: outcome.durationSeconds,
      transcript_summary: outcome.summary,
      started_at: outcome.startedAt.toISOString(),
      ended_at: new Date(outcome.startedAt.getTime() + outcome.durationSeconds * 1000).toISOString(),
      to: sent.to,
      metadata: sent.metadata,
    };
  }
  return {
    id: callId,
    agent_id: h.agentId,
    status: 'failed',
    failure_reason: outcome.reason,
    failed_at: outcome.failedAt.toISOString(),
    to: sent.to,
    metadata: sent.metadata,
  };
}

/** Exactly one event for the call, with the spec's data, delivered and verified as a receiver verifies it. */
async function assertOneEvent(
  h: ContractHarness,
  callId: string,
  outcome: ContractOutcome,
  /** What the call was placed with (its events carry both back). */
  sent: { to: string; metadata: unknown } = contractCall,
): Promise<void> {
  const type = outcome.status === 'completed' ? 'call.completed' : 'call.failed';
  assert.deepEqual(
    (await h.eventsOf(callId)).map((event) => event.type),
    [type],
    'one event for the call',
  );
  const expected = expectedData(h, callId, outcome, sent);
  const call = await h.readCall(callId);
  const readBack = outcome.status === 'completed' ? ['duration_seconds', 'transcript_summary', 'started_at', 'ended_at'] : [];
  for (const field of ['status', 'failure_reason', ...readBack]) {
    assert.equal(call[field], expected[field], `GET /v1/calls/{id}: ${field}`);
  }
  const payload = await h.deliveredFor(callId);
  assert.equal(payload.type, type);
  if (outcome.status === 'completed') assert.deepEqual(payload.data, expected);
  else {
    assert.deepEqual(Object.keys(payload.data).sort(), failedFields);
    assert.match(payload.data.failure_message, /\S/);
    assert.deepEqual({ ...payload.data, failure_message: undefined }, { ...expected, failure_message: undefined });
  }
}

/** Every outcome the fake can say: a completed call, and a failed one for each failure reason. */
function outcomesOf(h: ContractHarness): [string, ContractOutcome][] {
  const failedAt = new Date(Math.floor(h.clock.now().getTime() / 1000) * 1000 - 3_000);
  return [
    ['completed', completedOutcome(h.clock)],
    ...h.fake.failureReasons.map((reason): [string, ContractOutcome] => [`failed ${reason}`, { status: 'failed', reason, failedAt }]),
  ];
}

function placingCases(h: ContractHarness): void {
  it('a live key: 201 and exactly one create, whose body carries the dial id where the provider keeps it', async () => {
    const before = h.fake.createRequests().length;
    const { id, providerCallId } = await h.placeCall();
    const sent = h.fake.createRequests().slice(before);
    assert.equal(sent.length, 1);
    const dialId = h.fake.dialIdOf(sent[0]!);
    assert.match(String(dialId), dialIdRule);
    const dial = await h.dialOf({ callId: id });
    assert.equal(dial?.id, dialId, 'the dial id sent is the one the dial was recorded under');
    assert.equal(dial?.state, 'placed');
    assert.equal(providerCallId, h.fake.placedCallId());
  });

  it('a test key: the simulator answers and nothing reaches the provider', async () => {
    const { db, clock } = h.t.services;
    const key = await createApiKey(db, clock, { accountId: h.t.seed.accountId, name: 'contract test', mode: 'test' });
    const before = h.fake.requestCount();
    const res = await h.t.createCall({ agent_id: h.agentId, to: '+14155550123' }, { token: key.token });
    assert.equal(res.statusCode, 201, res.body);
    const row = await db.selectFrom('calls').select('provider').where('id', '=', res.json().id).executeTakeFirstOrThrow();
    assert.equal(row.provider, 'simulator');
    assert.equal(h.fake.requestCount(), before, 'the provider saw no request');
  });
}

function outcomeCases(h: ContractHarness): void {
  it('each outcome the provider can say → one call.completed or call.failed with the spec’s data', async (test) => {
    for (const [name, outcome] of outcomesOf(h)) {
      await test.test(name, async () => {
        const { id, providerCallId } = await h.placeCall();
        const handlings = await h.deliver(h.webhooksFor(providerCallId, outcome));
        assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
        await assertOneEvent(h, id, outcome);
      });
    }
  });
}

function webhookCases(h: ContractHarness): void {
  it('forged or stale: 401, nothing recorded; the same webhooks signed now are taken', async () => {
    const { id, providerCallId } = await h.placeCall();
    const outcome = completedOutcome(h.clock);
    const staleMs = h.clock.now().getTime() - h.fake.webhookToleranceMs - 60_000;
    for (const [name, hooks] of [
      ['forged', h.webhooksFor(providerCallId, outcome, { forged: true })],
      ['stale', h.webhooksFor(providerCallId, outcome, { timestampMs: staleMs })],
    ] as const) {
      for (const hook of hooks) {
        const res = await h.post(hook);
        assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
        assert.equal(res.json().error, 'unauthorized', name);
      }
    }
    assert.equal((await h.readCall(id)).status, 'initiated');
    assert.deepEqual(await h.eventsOf(id), []);
    await h.deliver(h.webhooksFor(providerCallId, outcome));
    await assertOneEvent(h, id, outcome);
  });

  it('each webhook twice at once, then again: one outcome, one event', async () => {
    const { id, providerCallId } = await h.placeCall();
    const outcome = completedOutcome(h.clock, 'Delivered more than once.');
    const handlings: string[] = [];
    for (const hook of h.webhooksFor(providerCallId, outcome)) {
      const both = await Promise.all([h.post(hook), h.post(hook)]);
      const again = await h.post(hook);
      for (const res of [...both, again]) {
        assert.equal(res.statusCode, 200, res.body);
        handlings.push(res.json().handling);
      }
    }
    assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
    await assertOneEvent(h, id, outcome);
  });

  it('out of order (the last first): one outcome, the right one', async () => {
    const { id, providerCallId } = await h.placeCall();
    const outcome = completedOutcome(h.clock, 'Reported out of order.', 61);
    const hooks = h.webhooksFor(providerCallId, outcome);
    assert.ok(hooks.length >= 2, 'a completed call has more than one webhook to reorder');
    const handlings = await h.deliver(hooks.toReversed());
    assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
    await assertOneEvent(h, id, outcome);
  });
}

function lookupCases(h: ContractHarness): void {
  it('a call whose webhook never comes is looked up after the reconcile delay and ended as the provider says', async () => {
    const completed = await h.placeCall();
    const failed = await h.placeCall();
    const completedAs = completedOutcome(h.clock, 'Known by looking.');
    const failedAs: ContractOutcome = { status: 'failed', reason: h.fake.failureReasons[0]!, failedAt: h.clock.now() };
    h.fake.endCallForLookup(completed.providerCallId, completedAs);
    h.fake.endCallForLookup(failed.providerCallId, failedAs);
    await h.t.services.callMonitor.pass();
    assert.equal(h.fake.lookupsOf(completed.providerCallId), 0, 'not looked up before the reconcile delay');

    h.clock.advance(contractSettings.reconcileAfterMs + 1_000);
    await h.t.services.callMonitor.pass();
    assert.equal(h.fake.lookupsOf(completed.providerCallId), 1);
    assert.equal(h.fake.lookupsOf(failed.providerCallId), 1);
    await assertOneEvent(h, completed.id, completedAs);
    assert.deepEqual(
      (await h.eventsOf(failed.id)).map((event) => [event.type, event.payload.data.failure_reason]),
      [['call.failed', failedAs.reason]],
    );
    const payload = await h.deliveredFor(failed.id);
    assert.deepEqual([payload.type, payload.data.failure_reason], ['call.failed', failedAs.reason]);
  });
}

function lostAnswerCases(h: ContractHarness, dialect: string): void {
  it('a create placed whose answer was lost is found by its dial id: one call, one event, never a second create', async () => {
    const key = `contract-found-${dialect}`;
    const before = h.fake.createRequests().length;
    h.fake.loseNextCreateAnswer({ placed: true });
    const lost = await h.t.createCall({ agent_id: h.agentId, to: '+14155550124' }, { idempotencyKey: key });
    assert.equal(lost.statusCode, 503, lost.body);
    const dial = await h.dialOf({ idempotencyKey: key });
    assert.equal(dial?.state, 'checking');
    assert.equal(h.fake.dialIdOf(h.fake.createRequests().at(-1)!), dial.id);

    const found = await h.settleDial(dial.id);
    assert.equal(found.state, 'found', found.history);
    const callId = `call_${h.fake.placedCallId()}`;
    assert.equal(found.call_id, callId);
    const retry = await h.t.createCall({ agent_id: h.agentId, to: '+14155550124' }, { idempotencyKey: key });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.json().id, callId);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(h.fake.createRequests().length, before + 1, 'dialed once');

    const outcome = completedOutcome(h.clock, 'Found after a lost answer.');
    const handlings = await h.deliver(h.webhooksFor(h.fake.placedCallId(), outcome));
    assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
    await assertOneEvent(h, callId, outcome, { to: '+14155550124', metadata: null });
  });

  it('a create not placed whose answer was lost ends not placed, with one create; the retry with its key places the call', async () => {
    const key = `contract-not-placed-${dialect}`;
    const before = h.fake.createRequests().length;
    h.fake.loseNextCreateAnswer({ placed: false });
    const lost = await h.t.createCall({ agent_id: h.agentId, to: '+14155550125' }, { idempotencyKey: key });
    assert.equal(lost.statusCode, 503, lost.body);
    const dial = await h.dialOf({ idempotencyKey: key });
    assert.ok(dial);
    const ended = await h.settleDial(dial.id);
    assert.equal(ended.state, 'not_placed', ended.history);
    assert.equal(ended.call_id, null);
    assert.equal(h.fake.createRequests().length, before + 1, 'never dialed again while unknown');
    const stored = await h.t.services.db.selectFrom('calls').select('id').where('to_number', '=', '+14155550125').execute();
    assert.deepEqual(stored, [], 'no call stored');

    const retry = await h.t.createCall({ agent_id: h.agentId, to: '+14155550125' }, { idempotencyKey: key });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(retry.json().id, `call_${h.fake.placedCallId()}`);
    assert.equal(h.fake.createRequests().length, before + 2);
  });
}

function agentSyncCases(h: ContractHarness): void {
  it('agents sync lists every agent and number of a workspace of several pages', async () => {
    const seeded = h.fake.seedWorkspace({ agents: 5, pageSize: 2 });
    const { accountId } = await h.t.newAccount();
    const directory = agentDirectoryFor(h.entry.name, h.t.services.config);
    assert.ok(directory, `${h.entry.name} is configured`);
    const result = await syncAgents(h.t.services.db, h.t.services.clock, directory, accountId);
    assert.deepEqual([result.added, result.skipped], [seeded.length, []]);
    assert.ok(h.fake.agentPagesServed() >= 3, `${h.fake.agentPagesServed()} pages of agents`);

    const stored = (await listAgents(h.t.services.db, accountId)).filter((agent) => agent.provider === h.entry.name);
    const byProviderId = (rows: [string, string, string | null, string | null][]) => rows.sort((a, b) => a[0].localeCompare(b[0]));
    assert.deepEqual(
      byProviderId(
        stored.map((agent) => [agent.provider_agent_id ?? agent.agent_id, agent.name, agent.phone_number_id, agent.phone_number]),
      ),
      byProviderId(
        seeded.map((agent) => [
          agent.providerAgentId,
          agent.name,
          agent.number && storedNumberId(h.entry, agent.number),
          agent.number?.e164 ?? null,
        ]),
      ),
    );
  });
}

for (const entry of providerCatalogue) {
  await forEachDialect(`Provider contract: ${entry.label}`, (dialect) => {
    const h = contractHarness(dialect, entry);
    describe('placing a call', () => placingCases(h));
    describe('outcomes by webhook', () => outcomeCases(h));
    describe('forged, stale, repeated and reordered webhooks', () => webhookCases(h));
    describe('a lost create answer', () => lostAnswerCases(h, dialect));
    describe('a webhook that never comes', () => lookupCases(h));
    describe('agents sync', () => agentSyncCases(h));
  });
}
