/**
 * Vapi's server messages through the real app: the HMAC signature (`x-signature` over
 * `"{x-timestamp}.{body}"`, five minutes either way), the end-of-call report making one event whatever the
 * number of deliveries, status updates, every outcome mapping, and calls we do not know.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { eventsOf, readCall } from '../support/elevenlabs-fixtures.js';
import { startFakeVapi, type FakeVapi } from '../support/fake-vapi.js';
import {
  addRetellVapiAgents,
  fillWorkspaces,
  placeCall,
  postVapi,
  retellVapiEnv,
  sendVapi,
  vapiKey,
  vapiSecret,
} from '../support/retell-vapi-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const minute = 60_000;

await forEachDialect('Vapi server messages', (dialect) => {
  let fake: FakeVapi;
  let t: TestApp;

  before(async () => {
    fake = await startFakeVapi({ apiKey: vapiKey, secret: vapiSecret });
    fillWorkspaces(undefined, fake);
    t = await startTestApp(dialect, { env: retellVapiEnv(undefined, fake) });
    await addRetellVapiAgents(t);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  const now = () => t.services.clock.now().getTime();

  describe('signature', () => {
    it('forged, tampered, stale, far-future, missing and malformed signatures are 401 and change nothing', async () => {
      const { id, providerId } = await placeCall(t, 'agent_vp');
      const body = fake.endOfCallReport(fake.endCall(providerId, { endedReason: 'customer-busy' }));
      const tampered = body.replace('customer-busy', 'customer-did-not-answer');
      const headers = fake.signedHeaders(body, now());
      const refusals: [string, Record<string, string>, string, RegExp][] = [
        ['another secret', fake.signedHeaders(body, now(), 'not-the-secret'), body, /x-signature header is invalid/],
        ['tampered body', headers, tampered, /x-signature header is invalid/],
        ['6 minutes old', fake.signedHeaders(body, now() - 6 * minute), body, /more than 5 minutes old/],
        ['6 minutes ahead', fake.signedHeaders(body, now() + 6 * minute), body, /ahead of this server's clock/],
        ['no x-signature', { 'x-timestamp': headers['x-timestamp']! }, body, /x-signature header is missing/],
        ['no x-timestamp', { 'x-signature': headers['x-signature']! }, body, /x-timestamp header is missing/],
        ['malformed', { ...headers, 'x-signature': 'abc' }, body, /x-signature header is invalid/],
        ['timestamp swapped', { ...headers, 'x-timestamp': String(now() - 1000) }, body, /x-signature header is invalid/],
      ];
      for (const [name, sent, text, message] of refusals) {
        const res = await postVapi(t, text, sent);
        assert.equal(res.statusCode, 401, `${name}: ${res.body}`);
        assert.equal(res.json().error, 'unauthorized', name);
        assert.match(res.json().message, message, name);
      }
      assert.equal((await readCall(t, id)).status, 'initiated');
      assert.equal((await eventsOf(t, id)).length, 0);

      // A timestamp in seconds, and a `sha256=` prefix, as an HMAC plan may be set up.
      const seconds = Math.floor(now() / 1000);
      const signed = fake.signedHeaders(body, seconds);
      const accepted = await postVapi(t, body, { ...signed, 'x-signature': `sha256=${signed['x-signature']}` });
      assert.equal(accepted.statusCode, 200, accepted.body);
      assert.deepEqual(accepted.json(), { received: true, handling: 'recorded' });
    });
  });

  describe('end-of-call report and status updates', () => {
    it('status updates are accepted; the report makes one call.completed with summary, duration and times, however often it comes', async () => {
      const { id, providerId } = await placeCall(t, 'agent_vp');
      const ringing = await sendVapi(t, fake, fake.statusUpdate(fake.calls.get(providerId)!, 'in-progress'));
      assert.deepEqual(ringing.json(), { received: true, handling: 'accepted' });
      const startedAt = new Date(Math.floor(now() / 1000) * 1000 - 2 * minute).toISOString();
      const endedAt = new Date(Date.parse(startedAt) + 61_000).toISOString();
      const call = fake.endCall(providerId, { endedReason: 'customer-ended-call', startedAt, endedAt, summary: 'Ada will call back.' });
      const ended = await sendVapi(t, fake, fake.statusUpdate(call, 'ended'));
      assert.deepEqual(ended.json(), { received: true, handling: 'awaiting_outcome' });
      const row = await t.services.db.selectFrom('calls').select('next_check_at').where('id', '=', id).executeTakeFirstOrThrow();
      assert.ok(Date.parse(row.next_check_at!) > now() + minute, 'the monitor looks if the report does not come');

      const report = fake.endOfCallReport(call);
      const both = await Promise.all([sendVapi(t, fake, report), sendVapi(t, fake, report)]);
      assert.deepEqual(both.map((res) => res.json().handling).sort(), ['duplicate', 'recorded']);
      const late = await sendVapi(t, fake, fake.statusUpdate(call, 'ended'));
      assert.equal(late.json().handling, 'duplicate');

      const events = await eventsOf(t, id);
      assert.deepEqual(
        events.map((event) => event.type),
        ['call.completed'],
      );
      assert.deepEqual(events[0]!.payload.data, {
        id,
        agent_id: 'agent_vp',
        status: 'completed',
        duration_seconds: 61,
        transcript_summary: 'Ada will call back.',
        started_at: startedAt,
        ended_at: endedAt,
        analysis: { successful: true, data: {} },
        to: '+14155550123',
        metadata: null,
      });
    });
  });

  describe('outcome mapping', () => {
    const cases: [string, string][] = [
      ['customer-busy', 'busy'],
      ['customer-did-not-answer', 'no_answer'],
      ['voicemail', 'voicemail'],
      ['vonage-rejected', 'rejected'],
      ['twilio-failed-to-connect-call', 'provider_error'],
      ['call.start.error-subscription-concurrency-limit-reached', 'provider_error'],
      ['call.in-progress.error-providerfault-outbound-sip-503-service-unavailable', 'provider_error'],
      // Ended through the API (a cancel) before anyone answered: no startedAt.
      ['manually-canceled', 'cancelled'],
    ];
    for (const [theirs, ours] of cases) {
      it(`${theirs} → call.failed with failure_reason ${ours} and their reason in failure_message`, async () => {
        const { id, providerId } = await placeCall(t, 'agent_vp');
        const res = await sendVapi(t, fake, fake.endOfCallReport(fake.endCall(providerId, { endedReason: theirs })));
        assert.equal(res.json().handling, 'recorded', res.body);
        const [event] = await eventsOf(t, id);
        assert.equal(event?.type, 'call.failed');
        assert.equal(event!.payload.data.failure_reason, ours);
        assert.ok(event!.payload.data.failure_message.includes(`Vapi: ${theirs}`), event!.payload.data.failure_message);
      });
    }
  });

  it('a call not stored (its report is held until it is), and message types callgate does not use, are acknowledged with 200', async () => {
    const stranger = JSON.stringify({ message: { type: 'end-of-call-report', endedReason: 'customer-busy', call: { id: 'not-ours' } } });
    const unknown = await sendVapi(t, fake, stranger);
    assert.deepEqual(unknown.json(), { received: true, handling: 'held' });
    const held = await t.services.db.selectFrom('held_outcomes').selectAll().where('conversation_id', '=', 'not-ours').execute();
    assert.deepEqual(
      held.map((row) => row.provider),
      ['vapi'],
    );
    const status = JSON.stringify({ message: { type: 'status-update', status: 'ended', call: { id: 'not-ours-either' } } });
    assert.deepEqual((await sendVapi(t, fake, status)).json(), { received: true, handling: 'unknown_conversation' });
    const { id, providerId } = await placeCall(t, 'agent_vp');
    const transcript = JSON.stringify({ message: { type: 'transcript', role: 'user', transcript: 'Hello?', call: { id: providerId } } });
    const ignored = await sendVapi(t, fake, transcript);
    assert.deepEqual(ignored.json(), { received: true, handling: 'ignored' });
    assert.equal((await readCall(t, id)).status, 'initiated');
  });
});
