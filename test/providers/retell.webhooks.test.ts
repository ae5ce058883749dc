/**
 * Retell's webhooks through the real app: the signature (`x-retell-signature`, keyed with the API key,
 * five minutes either way), call_ended waiting for call_analyzed, which makes one call.completed with the
 * summary, every outcome mapping, and calls we do not know. Their order reversed and their repeats are in
 * the provider contract (provider-contract.test.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { eventsOf, readCall } from '../support/elevenlabs-fixtures.js';
import { startFakeRetell, type FakeRetell } from '../support/fake-retell.js';
import {
  addRetellVapiAgents,
  fillWorkspaces,
  placeCall,
  postRetell,
  retellKey,
  retellVapiEnv,
  sendRetell,
} from '../support/retell-vapi-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const minute = 60_000;

await forEachDialect('Retell webhooks', (dialect) => {
  let fake: FakeRetell;
  let t: TestApp;

  before(async () => {
    fake = await startFakeRetell({ apiKey: retellKey });
    fillWorkspaces(fake, undefined);
    t = await startTestApp(dialect, { env: retellVapiEnv(fake, undefined) });
    await addRetellVapiAgents(t);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  const now = () => t.services.clock.now().getTime();

  describe('signature', () => {
    it('forged, tampered, stale, far-future, missing and malformed signatures are 401 and change nothing; 4 minutes old is accepted', async () => {
      const { id, providerId } = await placeCall(t, 'agent_rt');
      const call = fake.endCall(providerId, { status: 'not_connected', reason: 'dial_busy' });
      const body = fake.webhookBody('call_ended', call);
      const tampered = body.replace('dial_busy', 'dial_no_answer');
      assert.notEqual(tampered, body);
      const refusals: [string, string | undefined, string, RegExp][] = [
        ['another key', fake.sign(body, now(), 'key_someone_else'), body, /invalid/],
        ['tampered body', fake.sign(body, now()), tampered, /invalid/],
        ['6 minutes old', fake.sign(body, now() - 6 * minute), body, /more than 5 minutes old/],
        ['6 minutes ahead', fake.sign(body, now() + 6 * minute), body, /ahead of this server's clock/],
        ['missing', undefined, body, /missing/],
        ['malformed', 'v=abc,d=zz', body, /invalid/],
        ['timestamp swapped', fake.sign(body, now() - 1000).replace(/^v=\d+/, `v=${now()}`), body, /invalid/],
      ];
      for (const [name, signature, sent, message] of refusals) {
        const res = await postRetell(t, sent, signature);
        assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
        assert.equal(res.json().error, 'unauthorized', name);
        assert.match(res.json().message, message, name);
      }
      assert.equal((await readCall(t, id)).status, 'initiated');
      assert.equal((await eventsOf(t, id)).length, 0);

      const accepted = await postRetell(t, body, fake.sign(body, now() - 4 * minute));
      assert.equal(accepted.statusCode, 200, accepted.body);
      assert.deepEqual(accepted.json(), { received: true, handling: 'recorded' });
    });
  });

  describe('call_ended and call_analyzed', () => {
    it('call_ended waits for the analysis; call_analyzed makes one call.completed with summary, duration and times', async () => {
      const { id, providerId } = await placeCall(t, 'agent_rt');
      const startMs = Math.floor(now() / 1000) * 1000 - 2 * minute;
      const call = fake.endCall(providerId, {
        status: 'ended',
        reason: 'user_hangup',
        startMs,
        durationMs: 48_400,
        analysis: { call_summary: 'Ada confirmed the appointment.' },
      });
      const ended = await sendRetell(t, fake, fake.webhookBody('call_ended', call));
      assert.deepEqual(ended.json(), { received: true, handling: 'awaiting_outcome' });
      assert.equal((await readCall(t, id)).status, 'initiated');
      const row = await t.services.db.selectFrom('calls').select('next_check_at').where('id', '=', id).executeTakeFirstOrThrow();
      assert.ok(Date.parse(row.next_check_at!) >= now() + 2 * minute, 'the monitor looks once the analysis is overdue');

      const analyzed = await sendRetell(t, fake, fake.webhookBody('call_analyzed', call));
      assert.deepEqual(analyzed.json(), { received: true, handling: 'recorded' });
      const again = await sendRetell(t, fake, fake.webhookBody('call_analyzed', call));
      assert.equal(again.json().handling, 'duplicate');
      const late = await sendRetell(t, fake, fake.webhookBody('call_ended', call));
      assert.equal(late.json().handling, 'duplicate');

      const events = await eventsOf(t, id);
      assert.deepEqual(
        events.map((event) => event.type),
        ['call.completed'],
      );
      assert.deepEqual(events[0]!.payload.data, {
        id,
        agent_id: 'agent_rt',
        status: 'completed',
        duration_seconds: 48,
        transcript_summary: 'Ada confirmed the appointment.',
        started_at: new Date(startMs).toISOString(),
        ended_at: new Date(startMs + 48_000).toISOString(),
        analysis: { successful: true, data: {} },
        to: '+14155550123',
        metadata: null,
      });
    });
  });

  describe('outcome mapping', () => {
    const cases: {
      name: string;
      status: 'not_connected' | 'ended' | 'error';
      reason: string;
      analysis?: { in_voicemail: boolean };
      ours: string;
    }[] = [
      { name: 'dial_busy', status: 'not_connected', reason: 'dial_busy', ours: 'busy' },
      { name: 'dial_no_answer', status: 'not_connected', reason: 'dial_no_answer', ours: 'no_answer' },
      { name: 'voicemail_reached', status: 'ended', reason: 'voicemail_reached', ours: 'voicemail' },
      { name: 'call_analysis.in_voicemail', status: 'ended', reason: 'agent_hangup', analysis: { in_voicemail: true }, ours: 'voicemail' },
      { name: 'user_declined', status: 'not_connected', reason: 'user_declined', ours: 'rejected' },
      { name: 'dial_failed', status: 'not_connected', reason: 'dial_failed', ours: 'provider_error' },
      { name: 'concurrency_limit_reached', status: 'error', reason: 'concurrency_limit_reached', ours: 'provider_error' },
      { name: 'error_llm_websocket_open', status: 'error', reason: 'error_llm_websocket_open', ours: 'provider_error' },
    ];
    for (const testCase of cases) {
      it(`${testCase.name} → call.failed with failure_reason ${testCase.ours} and their reason in failure_message`, async () => {
        const { id, providerId } = await placeCall(t, 'agent_rt');
        const call = fake.endCall(providerId, {
          status: testCase.status,
          reason: testCase.reason,
          durationMs: 5_000,
          ...(testCase.analysis ? { analysis: testCase.analysis } : {}),
        });
        const res = await sendRetell(t, fake, fake.webhookBody(testCase.analysis ? 'call_analyzed' : 'call_ended', call));
        assert.equal(res.json().handling, 'recorded', res.body);
        const [event] = await eventsOf(t, id);
        assert.equal(event?.type, 'call.failed');
        assert.equal(event!.payload.data.failure_reason, testCase.ours);
        assert.match(event!.payload.data.failure_message, new RegExp(`Retell: ${testCase.analysis ? 'in_voicemail' : testCase.reason}`));
      });
    }
  });

  it('a call we do not know, and events callgate does not use, are acknowledged with 200', async () => {
    const stranger = { call_id: 'call_not_ours', call_status: 'ended', disconnection_reason: 'user_hangup' };
    const unknown = await sendRetell(t, fake, JSON.stringify({ event: 'call_ended', call: stranger }));
    assert.deepEqual(unknown.json(), { received: true, handling: 'unknown_conversation' });
    const { id, providerId } = await placeCall(t, 'agent_rt');
    const started = await sendRetell(t, fake, fake.webhookBody('call_started', fake.calls.get(providerId)!));
    assert.deepEqual(started.json(), { received: true, handling: 'ignored' });
    const notJson = '{"event": "call_ended",';
    const bad = await postRetell(t, notJson, fake.sign(notJson, now()));
    assert.equal(bad.statusCode, 400);
    assert.equal((await readCall(t, id)).status, 'initiated');
  });
});
