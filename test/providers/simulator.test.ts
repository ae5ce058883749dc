import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, it } from 'node:test';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { createAgentsAndKeyForMode } from './simulator.helpers.js';
import { forEachDialect } from '../helpers/dialects.js';
import { callBody, startTestApp, testEnvDefaults, type TestApp } from '../helpers/test-app.js';

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

await forEachDialect('The simulator provider', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '100' }, startMonitor: true });
  });
  after(async () => t.close());

  it('ends an ordinary call as completed with a plausible duration and summary', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const call = await waitForEnd(t, t.seed.token, created.id);
    assert.equal(call.status, 'completed');
    assert.ok(Number.isInteger(call.duration_seconds) && call.duration_seconds >= 15 && call.duration_seconds <= 240);
    assert.ok(call.transcript_summary.length > 20);
    assert.equal((Date.parse(call.ended_at) - Date.parse(call.started_at)) / 1000, call.duration_seconds);
    assert.ok(Date.parse(call.started_at) >= Date.parse(call.created_at));
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
      services.callMonitor.start();
      try {
        const deadline = Date.now() + 5_000;
        let status = 'initiated';
        while (status === 'initiated' && Date.now() < deadline) {
          await sleep(25);
          const res = await app.inject({ method: 'GET', url: `/v1/calls/${created.id}`, headers: { authorization: `Bearer ${t.seed.token}` } });
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
