/**
 * Reconciliation with several workers on one database: three processes' call monitors (three Services on
 * the same database, as three `CALLGATE_ROLES=worker` processes would be) sweep the same due ElevenLabs
 * calls at once while ElevenLabs' own webhooks for some of them arrive. Every call is looked up at most
 * once per due check and ends with exactly one event.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/container.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startTestApp, testEnvDefaults, type TestApp } from '../support/test-app.js';
import {
  addElevenLabsAgents,
  apiKey,
  elevenLabsEnv,
  eventsOf,
  nowSeconds,
  placeCall,
  readCall,
  sendSignedWebhook,
  transcriptionEvent,
  webhookSecret,
} from '../support/elevenlabs-fixtures.js';
import { memoryLogs } from '../support/memory-logs.js';

const minute = 60_000;
/** Per kind of conversation: how many calls end that way. */
const callsPerKind = 8;
const kinds = ['done', 'failed', 'inProgress', 'webhooked'] as const;
type Kind = (typeof kinds)[number];

await forEachDialect('ElevenLabs reconciliation with several workers', (dialect) => {
  const logs = memoryLogs();
  const clock = new ManualClock(Date.now());
  let fake: FakeElevenLabs;
  let t: TestApp;
  const otherWorkers: Services[] = [];
  const calls = new Map<Kind, { id: string; conversationId: string }[]>();

  before(async () => {
    fake = await startFakeElevenLabs({ apiKey });
    const env = elevenLabsEnv(fake);
    // Sweeps are run by hand below, all at once; the monitors' own intervals stay out of the way.
    const overrides = { clock, logger: logs.logger, monitorSweepIntervalMs: 3_600_000 };
    t = await startTestApp(dialect, { env, startMonitor: true, overrides });
    for (let i = 0; i < 2; i++) {
      const services = await createServices(loadConfig({ ...testEnvDefaults, ...t.database.env, ...env }), overrides);
      services.jobs.start([services.callMonitor.name]);
      otherWorkers.push(services);
    }
    await addElevenLabsAgents(t);
  });
  after(async () => {
    for (const services of otherWorkers) await services.close();
    await t?.close();
    await fake?.close();
  });

  const lookupsOf = (conversationId: string) =>
    fake.requestsTo('conversation').filter((request) => request.path === `/v1/convai/conversations/${conversationId}`).length;
  const sweepEverywhere = () =>
    Promise.all([t.services.callMonitor.pass(), ...otherWorkers.map((services) => services.callMonitor.pass())]);

  it('three monitors and racing webhooks: one look-up per call, one event per ended call', async () => {
    for (const kind of kinds) {
      const placed = [];
      for (let i = 0; i < callsPerKind; i++) placed.push(await placeCall(t, 'agent_el_twilio'));
      calls.set(kind, placed);
    }
    const startSecs = nowSeconds(t) + 5;
    for (const kind of kinds) {
      for (const { conversationId } of calls.get(kind)!) {
        const base = {
          agent_id: 'agent_el_twilio',
          conversation_id: conversationId,
          transcript: [],
          has_audio: true,
          has_user_audio: true,
          has_response_audio: true,
        };
        const state =
          kind === 'failed'
            ? { status: 'failed', metadata: { start_time_unix_secs: startSecs, call_duration_secs: 0 }, analysis: null }
            : kind === 'inProgress'
              ? { status: 'in-progress', metadata: { start_time_unix_secs: startSecs, call_duration_secs: 0 }, analysis: null }
              : {
                  status: 'done',
                  metadata: { start_time_unix_secs: startSecs, call_duration_secs: 30 },
                  analysis: { transcript_summary: 'Looked up.' },
                };
        fake.conversations.set(conversationId, { ...base, ...state });
      }
    }
    // Slow answers keep every monitor's checks in flight together, and the webhooks land in between.
    fake.respond = (request) => {
      if (request.route !== 'conversation') return undefined;
      const id = decodeURIComponent(request.path.slice('/v1/convai/conversations/'.length));
      const conversation = fake.conversations.get(id);
      return conversation ? { status: 200, body: conversation, delayMs: 25 } : undefined;
    };

    clock.advance(10 * minute + 1_000);
    const webhooks = calls
      .get('webhooked')!
      .map(({ conversationId }) =>
        sendSignedWebhook(t, transcriptionEvent(conversationId, { startSecs, durationSecs: 30, summary: 'Via webhook.' })),
      );
    const [answers] = await Promise.all([Promise.all(webhooks), sweepEverywhere(), sweepEverywhere()]);
    for (const answer of answers) {
      assert.equal(answer.statusCode, 200, answer.body);
      // The webhook or the look-up may win the race; either way the outcome is recorded once.
      assert.ok(['recorded', 'duplicate'].includes(answer.json().handling), answer.body);
    }

    for (const kind of kinds) {
      for (const { id, conversationId } of calls.get(kind)!) {
        const lookups = lookupsOf(conversationId);
        if (kind === 'webhooked') assert.ok(lookups <= 1, `${id} was looked up ${lookups} times`);
        else assert.equal(lookups, 1, `${id} (${kind}) was looked up ${lookups} times`);
        const events = (await eventsOf(t, id)).map((event) => event.type);
        const expected = kind === 'inProgress' ? [] : [kind === 'failed' ? 'call.failed' : 'call.completed'];
        assert.deepEqual(events, expected, `events of ${id} (${kind})`);
        assert.equal((await readCall(t, id)).status, kind === 'inProgress' ? 'initiated' : kind === 'failed' ? 'failed' : 'completed');
      }
    }
  });

  it('calls still running are looked up again once when due, by one of the monitors, and time out once', async () => {
    const running = calls.get('inProgress')!;
    const due = await t.services.db.selectFrom('calls').select('next_check_at').where('status', '=', 'initiated').execute();
    assert.equal(due.length, running.length);
    clock.set(Math.max(...due.map((row) => Date.parse(row.next_check_at!))) + 1_000);
    await Promise.all([sweepEverywhere(), sweepEverywhere()]);
    for (const { conversationId } of running) assert.equal(lookupsOf(conversationId), 2);

    clock.set(Date.parse((await readCall(t, running[0]!.id)).created_at) + 24 * 60 * minute + 1_000);
    await Promise.all([sweepEverywhere(), sweepEverywhere()]);
    for (const { id } of running) {
      const events = await eventsOf(t, id);
      assert.deepEqual(
        events.map((event) => [event.type, event.payload.data.failure_reason]),
        [['call.failed', 'timeout']],
        id,
      );
    }
  });

  it('nothing logged contains the ElevenLabs API key or the webhook secret', () => {
    const text = logs.text();
    assert.ok(logs.lines.length > 0);
    for (const secretText of [apiKey, webhookSecret, t.seed.token]) assert.ok(!text.includes(secretText));
  });
});
