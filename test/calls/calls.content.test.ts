/**
 * What happened on a call, through the API as a client reads it: the analysis on the call and in its
 * call.completed event, the transcript and the recording of a simulated call (test and live keys alike),
 * the 409 before the end, the 404 for another account or mode, a report that comes after the end filling
 * what the call lacked without a second event, and the retention purge deleting what it says and nothing else.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { purgeExpiredContent } from '../../src/features/calls/call-content.service.js';
import { recordOutcome } from '../../src/features/calls/calls.service.js';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { notKeptBody } from '../../src/http/request-log.plugin.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

const day = 86_400_000;
const retentionMs = 30 * day;

await forEachDialect('A call\u2019s analysis, transcript and recording', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '100' }, startMonitor: true });
  });
  after(async () => t.close());

  const get = (url: string, token = t.seed.token) => t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
  const ended = (id: string, token = t.seed.token) =>
    until(`call ${id} to end`, async () => {
      const call = (await get(`/v1/calls/${id}`, token)).json();
      return call.status === 'initiated' ? undefined : call;
    });

  it("a simulated call's analysis draws on its metadata, on GET, in the list and in call.completed alike", async () => {
    const created = (await t.createCall(callBody(t, { metadata: { name: 'Ada', customer_id: 'cus_42', attempt: 2 } }))).json();
    const call = await ended(created.id);
    assert.equal(call.status, 'completed');
    assert.equal(typeof call.analysis.successful, 'boolean');
    assert.equal(call.analysis.data.name, 'Ada');
    assert.equal(call.analysis.data.customer_id, 'cus_42');
    assert.equal(call.analysis.data.attempt, 2);
    assert.equal(typeof call.analysis.data.outcome, 'string');
    const listed = (await get('/v1/calls')).json().data.find((item: { id: string }) => item.id === created.id);
    assert.deepEqual(listed.analysis, call.analysis);
    const event = await t.services.db.selectFrom('webhook_events').selectAll().where('call_id', '=', created.id).executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(event.payload).data.analysis, call.analysis);
  });

  it('the transcript reads in order, with roles and offsets within the call', async () => {
    const created = (await t.createCall(callBody(t, { metadata: { name: 'Ada' } }))).json();
    const call = await ended(created.id);
    const res = await get(`/v1/calls/${created.id}/transcript`);
    assert.equal(res.statusCode, 200);
    const body = res.json();
    assert.equal(body.call_id, created.id);
    assert.equal(body.turns.length, 5);
    assert.deepEqual(
      body.turns.map((turn: { role: string }) => turn.role),
      ['agent', 'user', 'agent', 'user', 'agent'],
    );
    assert.match(body.turns[0].text, /Ada/);
    const offsets = body.turns.map((turn: { offset_seconds: number }) => turn.offset_seconds);
    assert.deepEqual(
      offsets,
      [...offsets].sort((a, b) => a - b),
    );
    assert.ok(offsets.every((offset: number) => offset >= 0 && offset <= call.duration_seconds));
    // Logged like any request, but what was said is not kept in the request log (its own retention is shorter).
    const logged = await until('the transcript read to be logged', () =>
      t.services.db
        .selectFrom('request_logs')
        .select(['status', 'response_body'])
        .where('path', '=', `/v1/calls/${created.id}/transcript`)
        .executeTakeFirst(),
    );
    assert.equal(logged.status, 200);
    assert.equal(logged.response_body, notKeptBody);
  });

  it('the recording streams as a valid WAV file, the same bytes each time, and is never cached', async () => {
    const created = (await t.createCall(callBody(t))).json();
    await ended(created.id);
    const res = await get(`/v1/calls/${created.id}/recording`);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'audio/wav');
    assert.equal(res.headers['cache-control'], 'private, no-store');
    const audio = res.rawPayload;
    assert.equal(Number(res.headers['content-length']), audio.length);
    assert.equal(audio.subarray(0, 4).toString('ascii'), 'RIFF');
    assert.equal(audio.subarray(8, 12).toString('ascii'), 'WAVE');
    assert.equal(audio.readUInt32LE(40), audio.length - 44, 'the data chunk is the rest of the file');
    assert.ok(audio.length > 10_000);
    assert.deepEqual((await get(`/v1/calls/${created.id}/recording`)).rawPayload, audio);
  });

  it('a test-mode key reads its simulated call\u2019s transcript and recording; a live key of the account gets 404', async () => {
    const testKey = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    const created = (await t.createCall(callBody(t), { token: testKey.token })).json();
    await ended(created.id, testKey.token);
    assert.equal((await get(`/v1/calls/${created.id}/transcript`, testKey.token)).json().turns.length, 5);
    assert.equal((await get(`/v1/calls/${created.id}/recording`, testKey.token)).statusCode, 200);
    for (const path of ['transcript', 'recording']) {
      const res = await get(`/v1/calls/${created.id}/${path}`);
      assert.equal(res.statusCode, 404, path);
      assert.equal(res.json().error, 'not_found');
    }
  });

  it("another account's key gets 404 not_found on both reads, as for an unknown id", async () => {
    const created = (await t.createCall(callBody(t))).json();
    await ended(created.id);
    const other = await t.newAccount({ agentId: 'agent_other_content' });
    for (const path of ['transcript', 'recording']) {
      for (const [id, token] of [
        [created.id, other.token],
        ['call_unknown', t.seed.token],
      ] as const) {
        const res = await get(`/v1/calls/${id}/${path}`, token);
        assert.equal(res.statusCode, 404, `${path} of ${id}`);
        assert.equal(res.json().error, 'not_found');
        assert.match(res.json().request_id, /^req_/);
      }
    }
  });

  it('a failed call has an analysis with no judgement, no transcript and no recording', async () => {
    const created = (await t.createCall(callBody(t, { to: '+15005550001' }))).json();
    const call = await ended(created.id);
    assert.equal(call.status, 'failed');
    assert.deepEqual(call.analysis, { successful: null, data: {} });
    assert.deepEqual((await get(`/v1/calls/${created.id}/transcript`)).json(), { call_id: created.id, turns: [] });
    const recording = await get(`/v1/calls/${created.id}/recording`);
    assert.equal(recording.statusCode, 404);
    assert.equal(recording.json().error, 'recording_not_available');
  });
});

await forEachDialect('Reading what a call kept, before its end and after', (dialect) => {
  let t: TestApp;
  before(async () => {
    // No monitor: calls stay initiated until the test ends them.
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const get = (url: string) => t.inject({ method: 'GET', url, headers: { authorization: `Bearer ${t.seed.token}` } });
  const events = (callId: string) => t.services.db.selectFrom('webhook_events').selectAll().where('call_id', '=', callId).execute();

  it('before the call has ended, both reads answer 409 call_not_ended and the call shows no analysis', async () => {
    const created = (await t.createCall(callBody(t))).json();
    for (const path of ['transcript', 'recording']) {
      const res = await get(`/v1/calls/${created.id}/${path}`);
      assert.equal(res.statusCode, 409, path);
      assert.equal(res.json().error, 'call_not_ended');
      assert.match(res.json().message, /call\.completed/);
    }
    assert.equal('analysis' in (await get(`/v1/calls/${created.id}`)).json(), false);
  });

  it('an analysis and transcript that come after the end fill the call, with no second event; what it has is kept', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const startedAt = new Date(Date.now() - 30_000);
    const base = { status: 'completed' as const, startedAt, endedAt: new Date(), durationSeconds: 30, transcriptSummary: '' };
    const first = await recordOutcome(t.services.db, t.services.clock, created.id, base);
    assert.equal(first.ended, true);
    const before = (await get(`/v1/calls/${created.id}`)).json();
    assert.deepEqual(before.analysis, { successful: null, data: {} });
    const late = {
      ...base,
      transcriptSummary: 'Confirmed for Tuesday.',
      content: {
        analysis: { successful: true, data: { slot: 'tuesday_10am', agreed: true } },
        turns: [
          { role: 'agent' as const, text: 'Does Tuesday work?', offsetSeconds: 1.5 },
          { role: 'user' as const, text: 'Yes.', offsetSeconds: 3 },
        ],
        recording: null,
      },
    };
    const second = await recordOutcome(t.services.db, t.services.clock, created.id, late);
    assert.equal(second.ended, false);
    const after = (await get(`/v1/calls/${created.id}`)).json();
    assert.deepEqual(after.analysis, { successful: true, data: { slot: 'tuesday_10am', agreed: true } });
    assert.equal(after.transcript_summary, 'Confirmed for Tuesday.');
    assert.deepEqual((await get(`/v1/calls/${created.id}/transcript`)).json().turns, [
      { role: 'agent', text: 'Does Tuesday work?', offset_seconds: 1.5 },
      { role: 'user', text: 'Yes.', offset_seconds: 3 },
    ]);
    // A third report changes nothing it has: the first analysis and transcript stand.
    await recordOutcome(t.services.db, t.services.clock, created.id, {
      ...late,
      content: {
        analysis: { successful: false, data: { slot: 'none' } },
        turns: [{ role: 'user', text: 'No.', offsetSeconds: 0 }],
        recording: null,
      },
    });
    assert.deepEqual((await get(`/v1/calls/${created.id}`)).json().analysis, after.analysis);
    assert.equal((await get(`/v1/calls/${created.id}/transcript`)).json().turns.length, 2);
    const written = await events(created.id);
    assert.equal(written.length, 1);
    assert.deepEqual(
      JSON.parse(written[0]!.payload).data.analysis,
      { successful: null, data: {} },
      'the event says what was known when it was sent',
    );
  });

  it('the retention purge deletes transcripts, analysis data and recordings past CALLGATE_TRANSCRIPT_RETENTION, and nothing else', async () => {
    const outcome = (summary: string) => ({
      status: 'completed' as const,
      startedAt: new Date(Date.now() - 60_000),
      endedAt: new Date(),
      durationSeconds: 60,
      transcriptSummary: summary,
      content: {
        analysis: { successful: true, data: { agreed: true } },
        turns: [{ role: 'agent' as const, text: 'Hello.', offsetSeconds: 0 }],
        recording: { kind: 'provider' as const },
      },
    });
    const old = (await t.createCall(callBody(t))).json();
    await recordOutcome(t.services.db, t.services.clock, old.id, outcome('Old call.'));
    const young = (await t.createCall(callBody(t))).json();
    await recordOutcome(t.services.db, t.services.clock, young.id, outcome('Young call.'));
    // The old call's content was stored 31 days ago, the young one's 29 days ago, by a clock moved on.
    const now = Date.now();
    await t.services.db
      .updateTable('call_content')
      .set({ stored_at: new Date(now - 31 * day).toISOString() })
      .where('call_id', '=', old.id)
      .execute();
    await t.services.db
      .updateTable('call_content')
      .set({ stored_at: new Date(now - 29 * day).toISOString() })
      .where('call_id', '=', young.id)
      .execute();

    const purged = await purgeExpiredContent(t.services.db, new Date(now), retentionMs, 1_000);
    assert.ok(purged >= 1);
    const oldCall = (await get(`/v1/calls/${old.id}`)).json();
    assert.equal(oldCall.status, 'completed');
    assert.equal(oldCall.transcript_summary, 'Old call.');
    assert.deepEqual(oldCall.analysis, { successful: true, data: {} });
    assert.deepEqual((await get(`/v1/calls/${old.id}/transcript`)).json().turns, []);
    const recording = await get(`/v1/calls/${old.id}/recording`);
    assert.equal(recording.statusCode, 404);
    assert.equal(recording.json().error, 'recording_not_available');
    assert.match(recording.json().message, /CALLGATE_TRANSCRIPT_RETENTION/);
    const [oldEvent] = await events(old.id);
    assert.ok(oldEvent, 'its event stays');
    assert.deepEqual(JSON.parse(oldEvent.payload).data.analysis, { successful: true, data: {} }, 'without the analysis data');
    assert.equal(JSON.parse(oldEvent.payload).data.transcript_summary, 'Old call.');

    const [youngEvent] = await events(young.id);
    assert.deepEqual(JSON.parse(youngEvent!.payload).data.analysis, { successful: true, data: { agreed: true } });
    const youngCall = (await get(`/v1/calls/${young.id}`)).json();
    assert.deepEqual(youngCall.analysis, { successful: true, data: { agreed: true } });
    assert.equal((await get(`/v1/calls/${young.id}/transcript`)).json().turns.length, 1);
    assert.equal((await get(`/v1/calls/${young.id}/recording`)).statusCode, 200);

    // A report after the purge brings nothing back.
    await recordOutcome(t.services.db, t.services.clock, old.id, outcome('Old call.'));
    assert.deepEqual((await get(`/v1/calls/${old.id}`)).json().analysis, { successful: true, data: {} });
    assert.deepEqual((await get(`/v1/calls/${old.id}/transcript`)).json().turns, []);
  });
});
