/**
 * The provider contract: the same cases against every catalogue entry's fake (test/support/contract-fakes/),
 * through the real app on both databases. A create carries the dial id where the provider keeps it; each
 * outcome the provider can say becomes one call.completed or call.failed with the spec's data, delivered and
 * verified as a receiver verifies it; forged and stale webhooks are refused, repeated and reordered ones
 * make one event; a call whose webhook never comes is looked up and ended; a lost create answer is found
 * by its dial id or known not placed, never dialed twice; agents sync reads every page; a test key never
 * reaches the provider. What a completed call kept is shown as the provider sent it, its noise dropped: the
 * analysis (on the call and in call.completed, also when it comes late), the transcript, the recording
 * streamed byte for byte (a recording URL fetched with no credential), each refused as the spec says before
 * the end, to another account, without a recording or with its source down, and never showing the
 * provider's URL or key. A call is cancelled where the provider can end calls (stopped once however often
 * asked; a ringing one ends call.failed / cancelled, an answered one call.completed, one event each) and
 * answered 409 cancel_not_supported where it cannot. A new provider gets all of it by adding its contract fake.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { syncAgents } from '../../src/features/agents/agents-sync.service.js';
import { listAgents } from '../../src/features/agents/agents.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { agentDirectoryFor, providerCatalogue } from '../../src/features/providers/provider-catalogue.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { until } from '../support/wait.js';
import { analysisOf, storedNumberId, type CompletedOutcome, type ContractOutcome } from '../support/provider-contract.js';
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
      analysis: analysisOf(outcome.content),
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
  if (outcome.status === 'completed') assert.deepEqual(call.analysis, expected.analysis, 'GET /v1/calls/{id}: analysis');
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
    ['completed', completedOutcome(h)],
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
    const outcome = completedOutcome(h);
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
    const outcome = completedOutcome(h, 'Delivered more than once.');
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
    const outcome = completedOutcome(h, 'Reported out of order.', 61);
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
    const completedAs = completedOutcome(h, 'Known by looking.');
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

    const outcome = completedOutcome(h, 'Found after a lost answer.');
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

/** What no answer of ours may show: the provider's settings (its key, secret, base URL and host), so its recording URLs too. */
function providerSecrets(h: ContractHarness): string[] {
  return Object.values(h.fake.env()).flatMap((value) => (URL.canParse(value) ? [value, new URL(value).host] : [value]));
}

function assertNothingOfTheProvider(h: ContractHarness, what: string, res: LightMyRequestResponse | string): void {
  const text =
    typeof res === 'string'
      ? res
      : `${JSON.stringify(res.headers)}\n${String(res.headers['content-type']).startsWith('audio/') ? '' : res.body}`;
  for (const secret of providerSecrets(h)) assert.ok(!text.includes(secret), `${what} shows ${secret}: ${text.slice(0, 300)}`);
}

/** A completed call, ended by its webhooks: its id, the provider's, and how it ended. */
async function completedCall(
  h: ContractHarness,
  outcome: CompletedOutcome = completedOutcome(h),
): Promise<{ id: string; providerCallId: string; outcome: CompletedOutcome }> {
  const { id, providerCallId } = await h.placeCall();
  const handlings = await h.deliver(h.webhooksFor(providerCallId, outcome));
  assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
  return { id, providerCallId, outcome };
}

/** GET /v1/calls/{id}/transcript answered 200: its turns, in the shape the contract states them. */
async function transcriptOf(h: ContractHarness, callId: string): Promise<unknown[]> {
  const res = await h.get(`/v1/calls/${callId}/transcript`);
  assert.equal(res.statusCode, 200, res.body);
  assertNothingOfTheProvider(h, 'the transcript', res);
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['call_id', 'turns']);
  assert.equal(body.call_id, callId);
  return body.turns;
}

const turnsOf = (outcome: CompletedOutcome) =>
  outcome.content.turns.map((turn) => ({ role: turn.role, text: turn.text, offset_seconds: turn.offsetSeconds }));

/** GET /v1/calls/{id}/recording is the outcome's recording, byte for byte, in its type, fetched as the provider asks. */
async function assertRecording(h: ContractHarness, callId: string, providerCallId: string, outcome: CompletedOutcome): Promise<void> {
  const recording = outcome.content.recording!;
  const before = h.fake.recordingRequests(providerCallId).length;
  const res = await h.get(`/v1/calls/${callId}/recording`);
  assert.equal(res.statusCode, 200, res.statusCode === 200 ? '' : res.body);
  assert.equal(String(res.headers['content-type']).split(';')[0], recording.contentType);
  assert.ok(res.rawPayload.equals(recording.bytes), `${res.rawPayload.length} bytes, not the ${recording.bytes.length} recorded`);
  assertNothingOfTheProvider(h, 'the recording', res);
  const asked = h.fake.recordingRequests(providerCallId).slice(before);
  assert.ok(asked.length >= 1, 'the provider was asked for the recording');
  const how = h.fake.recordingByUrl ? 'at its URL with no credential' : 'through the API with the key';
  assert.deepEqual(
    asked.map((request) => request.credential),
    asked.map(() => !h.fake.recordingByUrl),
    `the recording is fetched ${how}`,
  );
}

function contentCases(h: ContractHarness): void {
  it('a completed call shows its analysis as sent (noise left out) on GET and in the list; its call.completed carries the same', async () => {
    const { id, outcome } = await completedCall(h);
    await assertOneEvent(h, id, outcome);
    const listed = await h.get('/v1/calls?limit=5');
    assert.equal(listed.statusCode, 200, listed.body);
    const item = (listed.json().data as Record<string, any>[]).find((call) => call.id === id);
    assert.ok(item, 'the call is listed');
    assert.deepEqual(item.analysis, analysisOf(outcome.content), 'the list item');
    assertNothingOfTheProvider(h, 'the list', listed);
    assertNothingOfTheProvider(h, 'GET /v1/calls/{id}', await h.get(`/v1/calls/${id}`));
    assertNothingOfTheProvider(h, 'the call.completed event', JSON.stringify(await h.eventsOf(id)));
  });

  it('GET /transcript: the turns in order with roles and offsets, tool calls and system messages left out; the same for a call looked up', async () => {
    const byWebhook = await completedCall(h);
    assert.deepEqual(await transcriptOf(h, byWebhook.id), turnsOf(byWebhook.outcome));

    const looked = await h.placeCall();
    const lookedAs = completedOutcome(h, 'Known by looking.');
    h.fake.endCallForLookup(looked.providerCallId, lookedAs);
    h.clock.advance(contractSettings.reconcileAfterMs + 1_000);
    await h.t.services.callMonitor.pass();
    assert.equal((await h.readCall(looked.id)).status, 'completed');
    assert.deepEqual(await transcriptOf(h, looked.id), turnsOf(lookedAs));
    assert.deepEqual((await h.readCall(looked.id)).analysis, analysisOf(lookedAs.content));
    await assertRecording(h, looked.id, looked.providerCallId, lookedAs);
  });

  it('GET /recording: the exact bytes with the provider’s content type, a recording URL fetched with no credential; again on a second read', async () => {
    const { id, providerCallId, outcome } = await completedCall(h);
    await assertRecording(h, id, providerCallId, outcome);
    await assertRecording(h, id, providerCallId, outcome);
  });

  it('before the call ended: /transcript and /recording answer 409 call_not_ended, the provider not asked', async () => {
    const { id, providerCallId } = await h.placeCall();
    for (const path of ['transcript', 'recording']) {
      const res = await h.get(`/v1/calls/${id}/${path}`);
      assertErrorShape(res, 409, 'call_not_ended');
      assertNothingOfTheProvider(h, `/${path} before the end`, res);
    }
    assert.equal(h.fake.recordingRequests(providerCallId).length, 0);
  });

  it('another account’s key, or an unknown id: 404 not_found on /transcript and /recording', async () => {
    const { id, providerCallId } = await completedCall(h);
    const other = await h.t.newAccount();
    for (const path of ['transcript', 'recording']) {
      assertErrorShape(await h.get(`/v1/calls/${id}/${path}`, other.token), 404, 'not_found');
      assertErrorShape(await h.get(`/v1/calls/call_unknown${providerCallId.slice(0, 12)}/${path}`), 404, 'not_found');
    }
    assert.equal(h.fake.recordingRequests(providerCallId).length, 0, 'the provider was not asked');
  });

  it('a call the provider kept nothing of: analysis {successful: null, data: {}}, no turns, /recording 404 recording_not_available', async () => {
    const outcome = completedOutcome(h, 'Nothing kept.', 48, { successful: null, data: {}, nestedData: {}, turns: [], recording: null });
    const { id, providerCallId } = await completedCall(h, outcome);
    await assertOneEvent(h, id, outcome);
    assert.deepEqual(analysisOf(outcome.content), { successful: null, data: {} });
    assert.deepEqual(await transcriptOf(h, id), []);
    const res = await h.get(`/v1/calls/${id}/recording`);
    assertErrorShape(res, 404, 'recording_not_available');
    assertNothingOfTheProvider(h, 'recording_not_available', res);
    assert.equal(h.fake.recordingRequests(providerCallId).length, 0, 'nothing to ask the provider for');
  });

  it('the recording source answering 5xx, or gone: 503 provider_unavailable with Retry-After; once back, the recording', async () => {
    const { id, providerCallId, outcome } = await completedCall(h);
    for (const how of ['error', 'gone'] as const) {
      await h.fake.recordingSourceDown(how);
      try {
        const res = await h.get(`/v1/calls/${id}/recording`);
        assertErrorShape(res, 503, 'provider_unavailable');
        assert.match(String(res.headers['retry-after']), /^[1-9][0-9]*$/, `${how}: Retry-After`);
        assertNothingOfTheProvider(h, `provider_unavailable (${how})`, res);
      } finally {
        await h.fake.recordingSourceUp();
      }
    }
    assert.ok(h.fake.recordingRequests(providerCallId).length >= 1, 'the source answering 5xx was asked');
    await assertRecording(h, id, providerCallId, outcome);
  });

  // Last: it moves the clock on by minutes, further than a receiver verifying deliveries would take.
  it('an analysis that comes after the call completed is shown on GET, with no second call.completed', async () => {
    const { id, providerCallId } = await h.placeCall();
    const outcome = completedOutcome(h, 'Analysed late.', 48, {
      successful: false,
      data: { appointment_confirmed: false, callback_at: 'Friday 10:00' },
      nestedData: {},
    });
    await h.deliver(h.fake.endBeforeAnalysis(providerCallId, outcome, { timestampMs: h.clock.now().getTime() }));
    // A call left without its end is looked up (for Retell, again once its analysis is overdue).
    for (let step = 0; step < 20 && (await h.readCall(id)).status === 'initiated'; step++) {
      h.clock.advance(30_000);
      await h.t.services.callMonitor.pass();
    }
    const early = await h.readCall(id);
    assert.equal(early.status, 'completed', 'completed before its analysis came');
    // Nothing of the analysis yet, and so the event written says.
    const none = { successful: null, data: {} };
    assert.deepEqual(early.analysis, none, 'GET before the analysis came');
    assert.deepEqual(
      (await h.eventsOf(id)).map((event) => [event.type, event.payload.data.analysis]),
      [['call.completed', none]],
    );

    const handlings = await h.deliver(h.fake.analysisWebhooks(providerCallId, outcome, { timestampMs: h.clock.now().getTime() }));
    assert.ok(!handlings.includes('recorded'), handlings.join());
    assert.deepEqual((await h.readCall(id)).analysis, analysisOf(outcome.content));
    assert.deepEqual(await transcriptOf(h, id), turnsOf(outcome));
    assert.deepEqual(
      (await h.eventsOf(id)).map((event) => event.type),
      ['call.completed'],
      'no second event',
    );
  });
}

function cancelCases(h: ContractHarness): void {
  const cancel = (callId: string) =>
    h.t.inject({ method: 'POST', url: `/v1/calls/${callId}/cancel`, headers: { authorization: `Bearer ${h.t.seed.token}` } });
  const stopped = () => {
    const ways = h.fake.cancel;
    if (!ways) throw new Error(`${h.entry.name} ends no calls`);
    return ways;
  };
  /**
   * An agreed cancel has the monitor look at the call at once: that look is let through (it finds the call
   * still running) before the provider ends it, so that what follows is the webhooks' alone.
   */
  const promptedLook = async (providerCallId: string, before: number) => {
    await until('the look a cancel prompts', () => (h.fake.lookupsOf(providerCallId) > before ? true : undefined));
    await h.t.services.callMonitor.pass();
  };

  it('a provider that can end calls stops a ringing one once: 202, then one call.failed / cancelled; one that cannot says 409', async () => {
    const { id, providerCallId } = await h.placeCall();
    const before = h.fake.requestCount();
    if (h.fake.cancel === null) {
      const body = assertErrorShape(await cancel(id), 409, 'cancel_not_supported');
      assert.match(String(body.message), new RegExp(h.entry.label));
      assert.equal(h.fake.requestCount(), before, 'the provider was not asked');
      const call = await h.readCall(id);
      assert.deepEqual([call.status, call.cancel_requested_at], ['initiated', undefined]);
      return;
    }
    const looks = h.fake.lookupsOf(providerCallId);
    const res = await cancel(id);
    assert.equal(res.statusCode, 202, res.body);
    assert.equal(res.json().cancel_requested_at, h.clock.now().toISOString());
    await promptedLook(providerCallId, looks);
    const again = await cancel(id);
    assert.deepEqual([again.statusCode, again.json()], [202, res.json()]);
    const stops = stopped().stopRequests(providerCallId);
    assert.equal(stops.length, 1, 'one stop');
    assert.ok(stopped().isStopRequest(stops[0]!, providerCallId), `the vendor's stop: ${stops[0]!.method} ${stops[0]!.path}`);
    const failedAt = new Date(Math.floor(h.clock.now().getTime() / 1000) * 1000 - 1_000);
    const outcome: ContractOutcome = { status: 'failed', reason: 'cancelled', failedAt };
    const handlings = await h.deliver(stopped().stoppedWebhooks(providerCallId, outcome, { timestampMs: h.clock.now().getTime() }));
    assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
    await assertOneEvent(h, id, outcome);
    assertErrorShape(await cancel(id), 409, 'call_already_ended');
    assert.equal(stopped().stopRequests(providerCallId).length, 1);
  });

  it('an answered call stopped: one call.completed as the provider reports it (duration, summary, analysis)', async () => {
    if (h.fake.cancel === null) return;
    const { id, providerCallId } = await h.placeCall();
    const outcome = completedOutcome(h, 'Stopped mid-call.', 37);
    stopped().answer(providerCallId, outcome.startedAt);
    const looks = h.fake.lookupsOf(providerCallId);
    assert.equal((await cancel(id)).statusCode, 202);
    await promptedLook(providerCallId, looks);
    assert.equal(stopped().stopRequests(providerCallId).length, 1);
    const handlings = await h.deliver(stopped().stoppedWebhooks(providerCallId, outcome, { timestampMs: h.clock.now().getTime() }));
    assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
    await assertOneEvent(h, id, outcome);
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
    describe('what a completed call kept', () => contentCases(h));
    describe('agents sync', () => agentSyncCases(h));
    describe('cancelling a call', () => cancelCases(h));
  });
}
