/**
 * POST /v1/calls/{id}/cancel for Retell (`POST /v2/stop-call/{call_id}`) and Vapi (`{"type":"end-call"}` to
 * the call's `monitor.controlUrl`, kept from the create answer), against the fakes of their APIs, on both
 * databases. A ringing call stopped ends call.failed / cancelled, an answered one call.completed as the
 * provider reports it, each with one event, once the provider's end comes (a webhook: the fakes only record a
 * stop, as the vendors end the call a moment later); the provider is asked once however often the call is
 * cancelled; a stop whose answer is lost is asked again within the request, one that keeps failing answers 503
 * and leaves the call as it was; a provider's refusal for a call already over there answers 409 and has the
 * monitor read the outcome; the call's own end and a cancel may cross, with one event still. Vapi: a call
 * found after a lost create answer (no control URL kept) reads it from `GET /call/{id}`. Time is a
 * ManualClock; the call monitor and the dial job are run by hand.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import type { JobContext } from '../../src/jobs/job-runner.js';
import { ManualClock } from '../../src/lib/clock.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { eventsOf, readCall } from '../support/elevenlabs-fixtures.js';
import type { FakeProviderReply, FakeProviderRequest } from '../support/fake-provider-server.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import {
  addRetellVapiAgents,
  fillWorkspaces,
  placeCall,
  retellKey,
  retellVapiEnv,
  sendRetell,
  sendVapi,
  vapiKey,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

interface World {
  readonly t: TestApp;
  readonly retell: FakeRetell;
  readonly vapi: FakeVapi;
  readonly clock: ManualClock;
}

/** One provider as these cases drive it: its agent, its stop requests, and its ends as it reports them. */
interface Side {
  readonly name: 'Retell' | 'Vapi';
  readonly agentId: string;
  stopsOf(providerId: string): FakeProviderRequest<string>[];
  /** The stop request is the vendor's: path, credentials, body. */
  assertStopRequest(request: FakeProviderRequest<string>, providerId: string): void;
  queueStop(...replies: FakeProviderReply[]): void;
  loseNextStopAnswer(): void;
  /** An answer in the vendor's error shape. */
  errorReply(status: number): FakeProviderReply;
  answer(providerId: string, startMs: number): void;
  /** The provider ends the call as a stop ends it, and reports it by webhook: answered (and talked so long) or not. */
  reportStopped(providerId: string, answered?: { durationMs: number; summary: string }): Promise<void>;
  /** The call ends at the provider on its own, nobody having answered (no_answer); by webhook when `report`. */
  endUnanswered(providerId: string, report: boolean): Promise<void>;
  /** The callee hangs up after talking `durationMs`, reported by webhook. */
  reportHungUp(providerId: string, durationMs: number, summary: string): Promise<void>;
}

/** Posts webhooks in turn, each answered 200; what each did. */
async function deliver(sends: (() => Promise<LightMyRequestResponse>)[]): Promise<string[]> {
  const handlings: string[] = [];
  for (const send of sends) {
    const res = await send();
    assert.equal(res.statusCode, 200, res.body);
    handlings.push(res.json().handling as string);
  }
  assert.equal(handlings.filter((handling) => handling === 'recorded').length, 1, handlings.join());
  return handlings;
}

function retellSide(w: () => World): Side {
  const reportRetell = (call: ReturnType<FakeRetell['endCall']>, analysed: boolean) => {
    const { t, retell } = w();
    const events = analysed ? (['call_ended', 'call_analyzed'] as const) : (['call_ended'] as const);
    return deliver(events.map((event) => () => sendRetell(t, retell, retell.webhookBody(event, call))));
  };
  return {
    name: 'Retell',
    agentId: 'agent_rt',
    stopsOf: (providerId) => w().retell.stopsOf(providerId),
    assertStopRequest(request, providerId) {
      assert.equal(`${request.method} ${request.path}`, `POST /v2/stop-call/${providerId}`);
      assert.equal(request.headers.authorization, `Bearer ${retellKey}`);
      assert.equal(request.body, null, 'no body');
    },
    queueStop: (...replies) => w().retell.queue('stop', ...replies),
    loseNextStopAnswer: () => w().retell.loseNextAnswer('stop'),
    errorReply: (status) => ({ status, body: { status: 'error', message: 'Internal Server Error' } }),
    answer: (providerId, startMs) => void w().retell.answerCall(providerId, startMs),
    async reportStopped(providerId, answered) {
      const { retell, clock } = w();
      const end = answered
        ? { status: 'ended' as const, durationMs: answered.durationMs, analysis: { call_summary: answered.summary } }
        : { status: 'not_connected' as const, endMs: clock.now().getTime() };
      await reportRetell(retell.endCall(providerId, { reason: 'manual_stopped', ...end }), answered !== undefined);
    },
    async endUnanswered(providerId, report) {
      const { retell, clock } = w();
      const call = retell.endCall(providerId, { status: 'not_connected', reason: 'dial_no_answer', endMs: clock.now().getTime() });
      if (report) await reportRetell(call, false);
    },
    async reportHungUp(providerId, durationMs, summary) {
      const call = w().retell.endCall(providerId, {
        status: 'ended',
        reason: 'user_hangup',
        durationMs,
        analysis: { call_summary: summary },
      });
      await reportRetell(call, true);
    },
  };
}

function vapiSide(w: () => World): Side {
  const reportVapi = (call: ReturnType<FakeVapi['endCall']>) => {
    const { t, vapi } = w();
    return deliver([() => sendVapi(t, vapi, vapi.statusUpdate(call, 'ended')), () => sendVapi(t, vapi, vapi.endOfCallReport(call))]);
  };
  const endedAt = (providerId: string, durationMs: number) =>
    new Date(Date.parse(String(w().vapi.calls.get(providerId)!.startedAt)) + durationMs).toISOString();
  return {
    name: 'Vapi',
    agentId: 'agent_vp',
    stopsOf: (providerId) => w().vapi.controlsOf(providerId),
    assertStopRequest(request, providerId) {
      const { vapi } = w();
      // The URL the create answer gave, as given; the key goes with it, for it is at the API's own host.
      const controlUrl = (vapi.calls.get(providerId)!.monitor as { controlUrl: string }).controlUrl;
      assert.equal(`${vapi.url}${request.path}`, controlUrl);
      assert.equal(request.method, 'POST');
      assert.deepEqual(request.body, { type: 'end-call' });
      assert.equal(request.headers.authorization, `Bearer ${vapiKey}`);
    },
    queueStop: (...replies) => w().vapi.queue('control', ...replies),
    loseNextStopAnswer: () => w().vapi.loseNextAnswer('control'),
    errorReply: (status) => ({ status, body: { message: 'Internal server error', error: 'Internal Server Error', statusCode: status } }),
    answer: (providerId, startMs) => void w().vapi.answerCall(providerId, new Date(startMs).toISOString()),
    async reportStopped(providerId, answered) {
      const { vapi, clock } = w();
      const end = answered
        ? { endedAt: endedAt(providerId, answered.durationMs), summary: answered.summary }
        : { endedAt: clock.now().toISOString() };
      await reportVapi(vapi.endCall(providerId, { endedReason: 'manually-canceled', ...end }));
    },
    async endUnanswered(providerId, report) {
      const { vapi, clock } = w();
      const call = vapi.endCall(providerId, { endedReason: 'customer-did-not-answer', endedAt: clock.now().toISOString() });
      if (report) await reportVapi(call);
    },
    async reportHungUp(providerId, durationMs, summary) {
      const call = w().vapi.endCall(providerId, { endedReason: 'customer-ended-call', endedAt: endedAt(providerId, durationMs), summary });
      await reportVapi(call);
    },
  };
}

const cancel = (t: TestApp, id: string) =>
  t.inject({ method: 'POST', url: `/v1/calls/${id}/cancel`, headers: { authorization: `Bearer ${t.seed.token}` } });

async function eventTypes(t: TestApp, id: string): Promise<[string, unknown][]> {
  return (await eventsOf(t, id)).map((event) => [event.type, event.payload.data.failure_reason]);
}

/**
 * One pass of a job (the call monitor, the dial job) at the clock's time, run here: the worker is not started,
 * so nothing reads a call or looks for a dial but what a test runs, and no look can race a webhook.
 */
const passOf = (job: { runOnce(context: JobContext): Promise<unknown> }, clock: ManualClock) =>
  job.runOnce({ now: clock.now(), stopping: () => false });

/** A whole second before now, `ago` ms back: what the providers' times carry. */
const secondsAgo = (clock: ManualClock, ago: number) => Math.floor(clock.now().getTime() / 1000) * 1000 - ago;

function endingCases(side: Side, w: () => World): void {
  it('a ringing call: 202 with cancel_requested_at and one stop; the stopped end → call.failed / cancelled, one event', async () => {
    const { t, clock } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    const res = await cancel(t, id);
    assert.equal(res.statusCode, 202, res.body);
    const body = res.json();
    assert.deepEqual([body.id, body.status, body.cancel_requested_at], [id, 'initiated', clock.now().toISOString()]);
    assert.equal((await readCall(t, id)).cancel_requested_at, body.cancel_requested_at, 'GET shows it too');
    const stops = side.stopsOf(providerId);
    assert.equal(stops.length, 1);
    side.assertStopRequest(stops[0]!, providerId);

    await side.reportStopped(providerId);
    const call = await readCall(t, id);
    assert.deepEqual([call.status, call.failure_reason, call.cancel_requested_at], ['failed', 'cancelled', body.cancel_requested_at]);
    assert.deepEqual(await eventTypes(t, id), [['call.failed', 'cancelled']]);
    assertErrorShape(await cancel(t, id), 409, 'call_already_ended');
    assert.equal(side.stopsOf(providerId).length, 1, 'nothing asked of the provider once the call ended');
  });

  it('an answered call: 202; the stopped end → call.completed with the duration, times and summary reported, one event', async () => {
    const { t, clock } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    const startMs = secondsAgo(clock, 20_000);
    side.answer(providerId, startMs);
    assert.equal((await cancel(t, id)).statusCode, 202);
    assert.equal(side.stopsOf(providerId).length, 1);
    await side.reportStopped(providerId, { durationMs: 17_000, summary: 'Stopped while Ada was talking.' });
    const call = await readCall(t, id);
    assert.deepEqual(
      [call.status, call.duration_seconds, call.transcript_summary, call.started_at, call.ended_at],
      ['completed', 17, 'Stopped while Ada was talking.', new Date(startMs).toISOString(), new Date(startMs + 17_000).toISOString()],
    );
    assert.equal(call.failure_reason, undefined);
    assert.deepEqual(await eventTypes(t, id), [['call.completed', undefined]]);
  });

  it('a repeated cancel, one after another and two at once, answers the same 202; the provider saw one stop', async () => {
    const { t, clock } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    const first = await cancel(t, id);
    assert.equal(first.statusCode, 202, first.body);
    clock.advance(1_000);
    const again = [await cancel(t, id), ...(await Promise.all([cancel(t, id), cancel(t, id)]))];
    for (const res of again) {
      assert.equal(res.statusCode, 202, res.body);
      assert.deepEqual(res.json(), first.json());
    }
    assert.equal(side.stopsOf(providerId).length, 1);
  });

  it('the call’s own end and a cancel crossing: the end first → 409, nothing asked; the cancel first → the end reported, one event', async () => {
    const { t, clock } = w();
    const ended = await placeCall(t, side.agentId);
    await side.endUnanswered(ended.providerId, true);
    assertErrorShape(await cancel(t, ended.id), 409, 'call_already_ended');
    assert.equal(side.stopsOf(ended.providerId).length, 0, 'the provider was not asked');
    assert.deepEqual(await eventTypes(t, ended.id), [['call.failed', 'no_answer']]);

    // Agreed, then the callee hangs up before the stop takes effect: the provider's word is the outcome.
    const crossed = await placeCall(t, side.agentId);
    side.answer(crossed.providerId, secondsAgo(clock, 40_000));
    const res = await cancel(t, crossed.id);
    assert.equal(res.statusCode, 202, res.body);
    await side.reportHungUp(crossed.providerId, 38_000, 'Ada hung up first.');
    const call = await readCall(t, crossed.id);
    assert.deepEqual([call.status, call.duration_seconds, call.cancel_requested_at], ['completed', 38, res.json().cancel_requested_at]);
    assert.deepEqual(await eventTypes(t, crossed.id), [['call.completed', undefined]]);
    assertErrorShape(await cancel(t, crossed.id), 409, 'call_already_ended');
  });
}

function failureCases(side: Side, w: () => World): void {
  it('a stop whose answer is lost (a dropped connection, a 500) is asked again within the request → 202; two stops each', async () => {
    const { t } = w();
    const dropped = await placeCall(t, side.agentId);
    side.loseNextStopAnswer();
    const afterDrop = await cancel(t, dropped.id);
    assert.equal(afterDrop.statusCode, 202, afterDrop.body);
    assert.equal(side.stopsOf(dropped.providerId).length, 2);

    const erred = await placeCall(t, side.agentId);
    side.queueStop(side.errorReply(500));
    const afterError = await cancel(t, erred.id);
    assert.equal(afterError.statusCode, 202, afterError.body);
    assert.equal(side.stopsOf(erred.providerId).length, 2);
    for (const { providerId } of [dropped, erred]) {
      for (const stop of side.stopsOf(providerId)) side.assertStopRequest(stop, providerId);
    }
  });

  it('a stop failing every time (500) → 503 provider_unavailable with Retry-After, the call as it was; cancelling again is safe', async () => {
    const { t } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    const before = await readCall(t, id);
    side.queueStop(side.errorReply(500), side.errorReply(500), side.errorReply(500));
    const res = await cancel(t, id);
    assertErrorShape(res, 503, 'provider_unavailable');
    assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
    assert.equal(side.stopsOf(providerId).length, 3, 'asked three times in all');
    assert.deepEqual(await readCall(t, id), before, 'no cancel_requested_at, nothing changed');

    const later = await cancel(t, id);
    assert.equal(later.statusCode, 202, later.body);
    assert.equal(side.stopsOf(providerId).length, 4);
  });

  it('the provider refusing our credentials (401) → 502 provider_error, the call as it was', async () => {
    const { t } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    side.queueStop(side.errorReply(401));
    const res = await cancel(t, id);
    assertErrorShape(res, 502, 'provider_error');
    assert.equal(side.stopsOf(providerId).length, 1, 'a refusal is not asked again');
    assert.equal((await readCall(t, id)).cancel_requested_at, undefined);
  });

  it('a call over at the provider, not yet here: its 4xx → 409 call_already_ended; the monitor reads the call’s own outcome, one event', async () => {
    const { t } = w();
    const { id, providerId } = await placeCall(t, side.agentId);
    await side.endUnanswered(providerId, false);
    assertErrorShape(await cancel(t, id), 409, 'call_already_ended');
    assert.equal(side.stopsOf(providerId).length, 1);
    assert.equal((await readCall(t, id)).status, 'initiated', 'not ended before the provider says how');

    await passOf(t.services.callMonitor, w().clock);
    const call = await readCall(t, id);
    assert.deepEqual([call.status, call.failure_reason, call.cancel_requested_at], ['failed', 'no_answer', undefined]);
    assert.deepEqual(await eventTypes(t, id), [['call.failed', 'no_answer']]);
  });
}

function vapiControlCases(w: () => World): void {
  /** A Vapi call whose create answer was lost, found by its dial id: the call, and the provider's id of it. */
  async function foundAfterLostAnswer(): Promise<{ id: string; providerId: string }> {
    const { t, vapi, clock } = w();
    vapi.loseNextAnswer('create');
    const lost = await t.createCall({ agent_id: 'agent_vp', to: '+14155550126' });
    assert.equal(lost.statusCode, 503, lost.body);
    const dialId = (vapi.requestsTo('create').at(-1)!.body as { customer: { externalId: string } }).customer.externalId;
    const dial = async () => t.services.db.selectFrom('dials').selectAll().where('id', '=', dialId).executeTakeFirstOrThrow();
    for (let second = 0; second < 60 && ['asking', 'checking'].includes((await dial()).state); second++) {
      clock.advance(1_000);
      await passOf(t.services.dialJob, clock);
    }
    const found = await dial();
    assert.equal(found.state, 'found', found.history);
    const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', found.call_id!).executeTakeFirstOrThrow();
    assert.deepEqual([Boolean(row.found_after_lost_answer), row.provider_control], [true, null], 'found: no control URL kept');
    return { id: row.id, providerId: row.provider_conversation_id };
  }

  it('the control URL of the create answer is kept as given (never built from the base URL)', async () => {
    const { t, vapi } = w();
    const { id, providerId } = await placeCall(t, 'agent_vp');
    const row = await t.services.db.selectFrom('calls').select('provider_control').where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal(row.provider_control, `${vapi.url}/control/${providerId}`);
  });

  it('a call found after a lost create answer: cancel reads GET /call/{id} for monitor.controlUrl, then ends it there', async () => {
    const { t, vapi } = w();
    const { id, providerId } = await foundAfterLostAnswer();
    const from = vapi.requests.length;
    const res = await cancel(t, id);
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(
      vapi.requests.slice(from).map((request) => `${request.method} ${request.path}`),
      [`GET /call/${providerId}`, `POST /control/${providerId}`],
    );
    vapiSide(w).assertStopRequest(vapi.controlsOf(providerId)[0]!, providerId);
    await vapiSide(w).reportStopped(providerId);
    const call = await readCall(t, id);
    assert.deepEqual([call.status, call.failure_reason], ['failed', 'cancelled']);
    assert.equal((await eventsOf(t, id)).length, 1);
  });

  it('found after a lost answer and ended at Vapi → 409 call_already_ended with no end-call; without a control URL → 502', async () => {
    const { t, vapi, clock } = w();
    const over = await foundAfterLostAnswer();
    vapi.endCall(over.providerId, { endedReason: 'customer-busy', endedAt: clock.now().toISOString() });
    assertErrorShape(await cancel(t, over.id), 409, 'call_already_ended');
    assert.equal(vapi.controlsOf(over.providerId).length, 0);

    // Their assistant's monitorPlan.controlEnabled off: the call has no control URL.
    const uncontrolled = await foundAfterLostAnswer();
    delete vapi.calls.get(uncontrolled.providerId)!.monitor;
    const res = await cancel(t, uncontrolled.id);
    const body = assertErrorShape(res, 502, 'provider_error');
    assert.match(String(body.message), /control URL/);
    assert.equal((await readCall(t, uncontrolled.id)).cancel_requested_at, undefined);
  });
}

await forEachDialect('Retell and Vapi: cancelling a call', (dialect) => {
  const clock = new ManualClock(Date.now());
  let world: World | undefined;
  const w = (): World => {
    if (!world) throw new Error('used before the app started');
    return world;
  };

  before(async () => {
    const retell = await startFakeRetell({ apiKey: retellKey });
    const vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret, now: () => clock.now().getTime() });
    fillWorkspaces(retell, vapi);
    const t = await startTestApp(dialect, {
      env: retellVapiEnv(retell, vapi, { CALLGATE_DIAL_SEARCH_WINDOW: '3s' }),
      overrides: { clock },
    });
    await addRetellVapiAgents(t);
    world = { t, retell, vapi, clock };
  });
  after(async () => {
    await world?.t.close();
    await world?.retell.close();
    await world?.vapi.close();
  });

  for (const side of [retellSide(w), vapiSide(w)]) {
    describe(`${side.name}: ending a call`, () => endingCases(side, w));
    describe(`${side.name}: a provider that fails or refuses`, () => failureCases(side, w));
  }
  describe('Vapi: the control URL', () => vapiControlCases(w));
});
