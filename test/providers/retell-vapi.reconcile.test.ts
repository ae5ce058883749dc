/**
 * Retell and Vapi calls whose outcome does not come by webhook: the call monitor looks them up
 * (`GET /v2/get-call/{id}`, `GET /call/{id}`) after CALLGATE_RECONCILE_AFTER, a Retell call answered and
 * ended completes without a summary once its analysis is overdue, an id the provider does not know (yet) is
 * asked about again and fails `timeout` after 24 hours. And a create whose answer was lost is found again
 * by its dial id (`findDial`: Retell's list-calls by metadata, Vapi's call list matched on externalId).
 * Time is a ManualClock; sweeps are run by hand.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DialReference, VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { retellAnalysisWaitMs } from '../../src/features/providers/retell/retell.provider.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { eventsOf, readCall } from '../support/elevenlabs-fixtures.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import {
  addRetellVapiAgents,
  fillWorkspaces,
  placeCall,
  retellAgentId,
  retellKey,
  retellNumber,
  retellVapiEnv,
  sendRetell,
  vapiAssistantId,
  vapiKey,
  vapiNumberId,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { countCalls, startTestApp, type TestApp } from '../support/test-app.js';

const minute = 60_000;

await forEachDialect('Retell and Vapi reconciliation and lost create answers', (dialect) => {
  const clock = new ManualClock(Date.now());
  let retell: FakeRetell;
  let vapi: FakeVapi;
  let t: TestApp;

  before(async () => {
    retell = await startFakeRetell({ apiKey: retellKey });
    vapi = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    fillWorkspaces(retell, vapi);
    t = await startTestApp(dialect, {
      env: retellVapiEnv(retell, vapi),
      startMonitor: true,
      overrides: { clock, monitorSweepIntervalMs: 3_600_000 },
    });
    await addRetellVapiAgents(t);
  });
  after(async () => {
    await t?.close();
    await retell?.close();
    await vapi?.close();
  });

  const sweep = () => t.services.callMonitor.pass();
  const lookupsOf = (path: string) => [...retell.requests, ...vapi.requests].filter((request) => request.path === path).length;

  describe('reconciliation', () => {
    it('a silent call is looked up after CALLGATE_RECONCILE_AFTER, again while it runs, and ends as the provider says', async () => {
      const rt = await placeCall(t, 'agent_rt');
      const vp = await placeCall(t, 'agent_vp');
      await sweep();
      assert.equal(lookupsOf(`/v2/get-call/${rt.providerId}`) + lookupsOf(`/call/${vp.providerId}`), 0, 'not before 10 minutes');

      clock.advance(10 * minute + 1_000);
      await sweep();
      assert.equal(lookupsOf(`/v2/get-call/${rt.providerId}`), 1);
      assert.equal(lookupsOf(`/call/${vp.providerId}`), 1);
      assert.equal((await readCall(t, rt.id)).status, 'initiated');

      retell.endCall(rt.providerId, { status: 'not_connected', reason: 'dial_no_answer' });
      const startedAt = new Date(clock.now().getTime() - 90_000).toISOString();
      vapi.endCall(vp.providerId, {
        endedReason: 'customer-ended-call',
        startedAt,
        endedAt: new Date(Date.parse(startedAt) + 42_000).toISOString(),
        summary: 'Confirmed.',
      });
      clock.advance(30 * minute);
      await sweep();
      const rtCall = await readCall(t, rt.id);
      assert.deepEqual([rtCall.status, rtCall.failure_reason], ['failed', 'no_answer']);
      const vpCall = await readCall(t, vp.id);
      assert.deepEqual(
        [vpCall.status, vpCall.duration_seconds, vpCall.transcript_summary, vpCall.started_at],
        ['completed', 42, 'Confirmed.', startedAt],
      );
      assert.equal((await eventsOf(t, vp.id)).length, 1);
    });

    it('a Retell call that ended without call_analyzed completes without a summary once the analysis is overdue', async () => {
      const { id, providerId } = await placeCall(t, 'agent_rt');
      const call = retell.endCall(providerId, {
        status: 'ended',
        reason: 'user_hangup',
        startMs: clock.now().getTime() - 60_000,
        durationMs: 55_000,
        analysis: null,
      });
      const ended = await sendRetell(t, retell, retell.webhookBody('call_ended', call));
      assert.equal(ended.json().handling, 'awaiting_outcome');
      clock.advance(retellAnalysisWaitMs - 10_000);
      await sweep();
      assert.equal((await readCall(t, id)).status, 'initiated', 'not before the analysis is overdue');
      clock.advance(20_000);
      await sweep();
      const done = await readCall(t, id);
      assert.deepEqual([done.status, done.duration_seconds, done.transcript_summary], ['completed', 55, '']);
      assert.deepEqual(
        (await eventsOf(t, id)).map((event) => event.type),
        ['call.completed'],
      );
    });

    it('an id the provider does not know (Retell 422, Vapi 404) is asked about again, and fails timeout after 24 hours', async () => {
      const rt = await placeCall(t, 'agent_rt');
      const vp = await placeCall(t, 'agent_vp');
      retell.calls.delete(rt.providerId);
      vapi.calls.delete(vp.providerId);
      clock.advance(10 * minute + 1_000);
      await sweep();
      assert.equal((await readCall(t, rt.id)).status, 'initiated');
      assert.equal((await readCall(t, vp.id)).status, 'initiated');
      for (let hour = 0; hour < 25; hour++) {
        clock.advance(60 * minute);
        await sweep();
      }
      assert.ok(lookupsOf(`/v2/get-call/${rt.providerId}`) > 2);
      for (const { id } of [rt, vp]) {
        const call = await readCall(t, id);
        assert.deepEqual([call.status, call.failure_reason], ['failed', 'timeout']);
      }
    });
  });

  describe('lost create answers, found by dial id', () => {
    const providerOf = (name: 'retell' | 'vapi'): VoiceProvider => t.services.calls.providers.byName(name);

    it('Retell: the create dropped after placing is answered 503; findDial finds the call by metadata, and no other dial', async () => {
      retell.loseNextAnswer('create');
      const calls = await countCalls(t.services);
      const res = await t.createCall({ agent_id: 'agent_rt', to: '+14155550123' });
      assert.equal(res.statusCode, 503, res.body);
      assert.match(res.json().message, /may or may not have been placed/);
      assert.equal(await countCalls(t.services), calls);
      const sent = retell.requestsTo('create').at(-1)!.body as { metadata: { callgate_dial_id: string } };
      const placed = [...retell.calls.values()].at(-1)!;
      const dial: DialReference = {
        dialId: sent.metadata.callgate_dial_id,
        agentId: retellAgentId,
        phoneNumberId: retellNumber,
        to: '+14155550123',
        askedAt: clock.now(),
      };
      assert.deepEqual(await providerOf('retell').findDial(dial), { ok: true, value: { state: 'found', conversationId: placed.call_id } });
      const search = retell.requestsTo('listCalls').at(-1)!.body as Record<string, any>;
      assert.deepEqual(search.filter_criteria, { metadata: [{ type: 'string', op: 'eq', key: 'callgate_dial_id', value: dial.dialId }] });
      const other = await providerOf('retell').findDial({ ...dial, dialId: 'dial_00000000000000000000000000' });
      assert.deepEqual(other, { ok: true, value: { state: 'not_found' } });
      retell.queue('listCalls', { status: 500, body: { status: 'error', message: 'boom' } });
      const failing = await providerOf('retell').findDial(dial);
      assert.equal(failing.ok, false);
    });

    it('Vapi: the create dropped after placing is answered 503; findDial matches externalId among the assistant’s recent calls', async () => {
      await placeCall(t, 'agent_vp');
      vapi.loseNextAnswer('create');
      const res = await t.createCall({ agent_id: 'agent_vp', to: '+14155550123' });
      assert.equal(res.statusCode, 503, res.body);
      const sent = vapi.requestsTo('create').at(-1)!.body as { customer: { externalId: string } };
      const placed = [...vapi.calls.values()].at(-1)!;
      const dial: DialReference = {
        dialId: sent.customer.externalId,
        agentId: vapiAssistantId,
        phoneNumberId: vapiNumberId,
        to: '+14155550123',
        askedAt: new Date(),
      };
      assert.deepEqual(await providerOf('vapi').findDial(dial), { ok: true, value: { state: 'found', conversationId: placed.id } });
      const query = vapi.requestsTo('listCalls').at(-1)!.query;
      assert.equal(query.get('assistantId'), vapiAssistantId);
      assert.ok(Date.parse(query.get('createdAtGe')!) <= dial.askedAt.getTime() - 60_000);
      const other = await providerOf('vapi').findDial({ ...dial, dialId: 'dial_00000000000000000000000000' });
      assert.deepEqual(other, { ok: true, value: { state: 'not_found' } });
    });
  });
});
