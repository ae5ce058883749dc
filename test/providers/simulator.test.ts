import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import type { CallOutcome } from '../../src/features/providers/provider.interface.js';
import { simulatedOutcome } from '../../src/features/providers/simulator.provider.js';
import { createAgentsAndKeyForMode } from '../support/elevenlabs-fixtures.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, testEnvDefaults, type TestApp } from '../support/test-app.js';

async function readCall(t: TestApp, token: string, id: string) {
  const res = await t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: { authorization: `Bearer ${token}` } });
  assert.equal(res.statusCode, 200);
  return res.json();
}

async function waitForEnd(t: TestApp, token: string, id: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const call = await readCall(t, token, id);
    if (call.status !== 'initiated') return call;
    if (Date.now() > deadline) assert.fail(`call ${id} did not end within ${timeoutMs} ms`);
    await sleep(25);
  }
}

describe('simulatedOutcome', () => {
  const createdAt = new Date('2030-01-01T00:00:00.000Z');
  const outcomes = (delayMs: number) =>
    Array.from({ length: 200 }, (_, i) => {
      const outcome = simulatedOutcome({ conversationId: `conv_${i}`, to: '+14155550123', createdAt }, delayMs);
      assert.equal(outcome.status, 'completed');
      return outcome as Extract<CallOutcome, { status: 'completed' }>;
    });

  for (const delayMs of [0, 100, 1_000, 3_000, 60_000, 242_000, 3_600_000]) {
    it(`with a delay of ${delayMs} ms: created <= started <= ended = created + delay, and the duration fits`, () => {
      for (const outcome of outcomes(delayMs)) {
        assert.equal(outcome.endedAt.getTime(), createdAt.getTime() + delayMs);
        assert.ok(outcome.startedAt.getTime() >= createdAt.getTime(), 'answered after it was placed');
        assert.equal(outcome.endedAt.getTime() - outcome.startedAt.getTime(), outcome.durationSeconds * 1000);
        assert.ok(Number.isInteger(outcome.durationSeconds) && outcome.durationSeconds <= 240);
      }
    });
  }

  it('the default 3 s delay gives a 2 s call; a long delay spreads durations over 15 to 240 s', () => {
    assert.deepEqual(new Set(outcomes(3_000).map((o) => o.durationSeconds)), new Set([2]));
    const minute = outcomes(60_000).map((o) => o.durationSeconds);
    assert.ok(Math.min(...minute) >= 15 && Math.max(...minute) <= 58, `${Math.min(...minute)}..${Math.max(...minute)}`);
    const long = outcomes(3_600_000).map((o) => o.durationSeconds);
    assert.ok(Math.min(...long) < 40 && Math.max(...long) > 215, `${Math.min(...long)}..${Math.max(...long)}`);
    assert.ok(long.every((d) => d >= 15));
  });

  it('the same call gives the same outcome again (after a restart)', () => {
    const call = { conversationId: 'conv_same', to: '+14155550123', createdAt };
    assert.deepEqual(simulatedOutcome(call, 3_000), simulatedOutcome(call, 3_000));
  });

  it('busy and unanswered calls fail at the end of the delay', () => {
    const busy = simulatedOutcome({ conversationId: 'conv_b', to: '+15005550001', createdAt }, 3_000);
    assert.deepEqual(busy, {
      status: 'failed',
      reason: 'busy',
      message: 'The line was busy.',
      failedAt: new Date(createdAt.getTime() + 3_000),
    });
  });
});

await forEachDialect('The simulator provider', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '100' }, startMonitor: true });
  });
  after(async () => t.close());

  it("ends an ordinary call as completed, its times within the call's life, with a summary", async () => {
    const created = (await t.createCall(callBody(t))).json();
    const call = await waitForEnd(t, t.seed.token, created.id);
    const seenEndedAt = Date.now();
    assert.equal(call.status, 'completed');
    assert.ok(call.transcript_summary.length > 20);
    // CALLGATE_SIMULATOR_DELAY_MS is 100 here: the call ends 100 ms after its creation, too soon for a whole second.
    assert.equal(call.duration_seconds, 0);
    assert.equal(Date.parse(call.ended_at), Date.parse(call.created_at) + 100);
    assert.equal((Date.parse(call.ended_at) - Date.parse(call.started_at)) / 1000, call.duration_seconds);
    assert.ok(Date.parse(call.ended_at) <= seenEndedAt, 'the end is not in the future');
  });

  it('+15005550001 ends busy and +15005550002 unanswered', async () => {
    const busy = (await t.createCall(callBody(t, { to: '+15005550001' }))).json();
    const noAnswer = (await t.createCall(callBody(t, { to: '+15005550002' }))).json();
    const busyCall = await waitForEnd(t, t.seed.token, busy.id);
    const noAnswerCall = await waitForEnd(t, t.seed.token, noAnswer.id);
    assert.equal(busyCall.status, 'failed');
    assert.equal(busyCall.failure_reason, 'busy');
    assert.equal(noAnswerCall.status, 'failed');
    assert.equal(noAnswerCall.failure_reason, 'no_answer');
    assert.ok(busyCall.failed_at);
  });

  it('+15005550003 is refused at creation with 502 provider_error and nothing stored', async () => {
    const res = await t.createCall(callBody(t, { to: '+15005550003' }));
    assert.equal(res.statusCode, 502);
    assert.equal(res.json().error, 'provider_error');
    const stored = await t.services.db.selectFrom('calls').selectAll().where('to_number', '=', '+15005550003').execute();
    assert.equal(stored.length, 0);
  });

  it('test-mode keys always use the simulator, even for an ElevenLabs agent', async () => {
    const { testToken, liveToken, agentId } = await createAgentsAndKeyForMode(t);
    const viaTest = await t.createCall({ agent_id: agentId, to: '+14155550123' }, { token: testToken });
    assert.equal(viaTest.statusCode, 201);
    const row = await t.services.db.selectFrom('calls').selectAll().where('id', '=', viaTest.json().id).executeTakeFirstOrThrow();
    assert.equal(row.provider, 'simulator');
    assert.equal(row.mode, 'test');
    // A live key would need the real provider, which this server has no API key for.
    const viaLive = await t.createCall({ agent_id: agentId, to: '+14155550123' }, { token: liveToken });
    assert.equal(viaLive.statusCode, 503);
    assert.equal(viaLive.json().error, 'provider_unavailable');
    assert.match(viaLive.json().message, /ELEVENLABS_API_KEY/);
  });
});

await forEachDialect('Calls survive a restart', (dialect) => {
  it('a call left initiated by a stopped process is ended by the next one', async () => {
    const t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '50' } });
    let closed = false;
    try {
      // No monitor runs in this process: as if it died right after answering 201.
      const created = (await t.createCall(callBody(t))).json();
      await t.app.close();
      await t.services.close();
      closed = true;
      await sleep(60);

      const config = loadConfig({ ...testEnvDefaults, ...t.database.env, CALLGATE_SIMULATOR_DELAY_MS: '50' });
      const services = await createServices(config, { monitorSweepIntervalMs: 50 });
      const app = buildApp(services);
      await app.ready();
      services.jobs.start([services.callMonitor.name]);
      try {
        const deadline = Date.now() + 5_000;
        let status = 'initiated';
        while (status === 'initiated' && Date.now() < deadline) {
          await sleep(25);
          const res = await app.inject({
            method: 'GET',
            url: `/v1/calls/${created.id}`,
            headers: { authorization: `Bearer ${t.seed.token}` },
          });
          status = res.json().status;
        }
        assert.equal(status, 'completed');
      } finally {
        await app.close();
        await services.close();
      }
    } finally {
      if (!closed) {
        await t.app.close();
        await t.services.close();
      }
      await t.database.drop();
    }
  });
});
