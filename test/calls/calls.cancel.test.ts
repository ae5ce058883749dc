/**
 * POST /v1/calls/{id}/cancel with the simulator, on a clock the test moves: a call cancelled while it rings
 * ends call.failed / cancelled, one cancelled once answered ends call.completed with what was said until
 * then, each with one event; a second cancel while the call is ending answers the same 202 and asks nothing
 * more; an ended call is 409 call_already_ended; another account's or mode's call, or an unknown one, is 404;
 * a provider that cannot end calls (ElevenLabs, configured or not) is 409 cancel_not_supported.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { upsertAgent } from '../../src/features/agents/agents.service.js';
import { assertErrorShape } from '../support/api-errors.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

// Each simulated call lasts a minute and rings for its first 2 s (a third of the delay, at most 2 s).
const env = { CALLGATE_SIMULATOR_DELAY_MS: '60000' };

await forEachDialect('Cancelling a call', (dialect) => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(Date.parse('2026-11-28T12:00:00.000Z'));
    t = await startTestApp(dialect, { env, overrides: { clock }, startMonitor: true });
  });
  after(async () => t.close());

  const auth = (token: string) => ({ authorization: `Bearer ${token}` });
  const cancel = (id: string, token = t.seed.token) => t.inject({ method: 'POST', url: `/v1/calls/${id}/cancel`, headers: auth(token) });
  const get = (id: string, token = t.seed.token) => t.inject({ method: 'GET', url: `/v1/calls/${id}`, headers: auth(token) });
  const ended = (id: string) =>
    until(`call ${id} to end`, async () => {
      const call = (await get(id)).json();
      return call.status === 'initiated' ? undefined : call;
    });
  const eventsOf = (id: string) =>
    t.services.db.selectFrom('webhook_events').select(['type', 'payload']).where('call_id', '=', id).execute();

  describe('simulator', () => {
    it('cancelled while ringing: 202 with cancel_requested_at, then call.failed / cancelled, one event', async () => {
      const created = (await t.createCall(callBody(t))).json();
      clock.advance(500);
      const res = await cancel(created.id);
      assert.equal(res.statusCode, 202);
      const body = res.json();
      assert.equal(body.id, created.id);
      assert.equal(body.cancel_requested_at, clock.now().toISOString());
      const call = await ended(created.id);
      assert.equal(call.status, 'failed');
      assert.equal(call.failure_reason, 'cancelled');
      assert.equal(call.failed_at, body.cancel_requested_at);
      assert.equal(call.cancel_requested_at, body.cancel_requested_at);
      const events = await eventsOf(created.id);
      assert.deepEqual(
        events.map((event) => event.type),
        ['call.failed'],
      );
      assert.equal(JSON.parse(events[0]!.payload).data.failure_reason, 'cancelled');
      assertErrorShape(await cancel(created.id), 409, 'call_already_ended');
    });

    it('cancelled once answered: call.completed with the seconds spoken until then, one event', async () => {
      const created = (await t.createCall(callBody(t))).json();
      clock.advance(7_400);
      assert.equal((await cancel(created.id)).statusCode, 202);
      const call = await ended(created.id);
      assert.equal(call.status, 'completed');
      // Answered after the 2 s ring, ended at 7.4 s: 5 whole seconds.
      assert.equal(call.duration_seconds, 5);
      assert.equal(call.ended_at, clock.now().toISOString());
      assert.equal(call.analysis.successful !== undefined, true);
      const events = await eventsOf(created.id);
      assert.deepEqual(
        events.map((event) => event.type),
        ['call.completed'],
      );
      const transcript = (await t.inject({ method: 'GET', url: `/v1/calls/${created.id}/transcript`, headers: auth(t.seed.token) })).json();
      assert.ok(transcript.turns.length > 0);
    });

    it('a call past its own end answers 409 call_already_ended, and its outcome is its own', async () => {
      const created = (await t.createCall(callBody(t))).json();
      clock.advance(61_000);
      const res = await cancel(created.id);
      assertErrorShape(res, 409, 'call_already_ended');
      const call = await ended(created.id);
      assert.equal(call.status, 'completed');
      assert.equal(call.cancel_requested_at, undefined);
    });

    it("an unknown call, another account's and one of the other mode are 404 not_found; the call is untouched", async () => {
      const created = (await t.createCall(callBody(t))).json();
      assertErrorShape(await cancel('call_unknown'), 404, 'not_found');
      const other: SeededAccount = await t.newAccount({ agentId: 'agent_cancel_other' });
      assertErrorShape(await cancel(created.id, other.token), 404, 'not_found');
      const testKey = await t.newAccount({ mode: 'test', agentId: 'agent_cancel_test' });
      assertErrorShape(await cancel(created.id, testKey.token), 404, 'not_found');
      const call = (await get(created.id)).json();
      assert.equal(call.cancel_requested_at, undefined);
      assert.equal(call.status, 'initiated');
    });
  });
});

await forEachDialect('Cancelling a call: repeats and providers that cannot', (dialect) => {
  let t: TestApp;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(Date.parse('2026-11-28T12:00:00.000Z'));
    // No monitor: the calls stay as they are, so what a second cancel does is seen alone.
    t = await startTestApp(dialect, { env, overrides: { clock } });
  });
  after(async () => t.close());

  const cancel = (id: string, token = t.seed.token) =>
    t.inject({ method: 'POST', url: `/v1/calls/${id}/cancel`, headers: { authorization: `Bearer ${token}` } });

  it('a second cancel while the call is ending answers the same 202 with the same cancel_requested_at', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const first = await cancel(created.id);
    clock.advance(1_000);
    const second = await cancel(created.id);
    assert.equal(first.statusCode, 202);
    assert.equal(second.statusCode, 202);
    assert.deepEqual(second.json(), first.json());
    const together = await Promise.all([cancel(created.id), cancel(created.id)]);
    for (const res of together) assert.deepEqual(res.json(), first.json());
  });

  it('two cancels at once of a fresh call: both 202, one cancel_requested_at', async () => {
    const created = (await t.createCall(callBody(t))).json();
    const [a, b] = await Promise.all([cancel(created.id), cancel(created.id)]);
    assert.equal(a!.statusCode, 202);
    assert.equal(b!.statusCode, 202);
    assert.equal(a!.json().cancel_requested_at, b!.json().cancel_requested_at);
  });

  it('an ElevenLabs call (its provider not configured here) is 409 cancel_not_supported, saying why and what to do', async () => {
    await upsertAgent(t.services.db, t.services.clock, {
      accountId: t.seed.accountId,
      agentId: 'agent_cancel_eleven',
      name: 'ElevenLabs agent',
      provider: 'elevenlabs',
    });
    const now = clock.now().toISOString();
    const agent = await t.services.db
      .selectFrom('agents')
      .selectAll()
      .where('agent_id', '=', 'agent_cancel_eleven')
      .executeTakeFirstOrThrow();
    await t.services.db
      .insertInto('calls')
      .values({
        id: 'call_conv_eleven_cancel',
        account_id: t.seed.accountId,
        api_key_id: t.seed.keyId,
        agent_id: agent.agent_id,
        agent_ref: agent.id,
        mode: 'live',
        provider: 'elevenlabs',
        provider_conversation_id: 'conv_eleven_cancel',
        to_number: '+14155550123',
        metadata: null,
        status: 'initiated',
        created_at: now,
        updated_at: now,
        next_check_at: null,
        started_at: null,
        ended_at: null,
        duration_seconds: null,
        transcript_summary: null,
        failure_reason: null,
        failure_message: null,
        failed_at: null,
        batch_id: null,
        reference: null,
        analysis_successful: null,
        analysis_data: null,
      })
      .execute();
    const res = await cancel('call_conv_eleven_cancel');
    const body = assertErrorShape(res, 409, 'cancel_not_supported');
    assert.match(String(body.message), /ElevenLabs/);
    assert.match(String(body.message), /suppression list/);
  });
  it('a cancelled call keeps its place in the concurrency limit until its end is reported (last: starts the monitor)', async () => {
    const account = await t.newAccount({ agentId: 'agent_cancel_limit' });
    await t.services.db.updateTable('accounts').set({ max_concurrent_calls: 1 }).where('id', '=', account.accountId).execute();
    const call = (to: string) => t.createCall({ agent_id: account.agentId, to }, { token: account.token });
    const first = (await call('+14155550131')).json();
    assert.equal((await cancel(first.id, account.token)).statusCode, 202);
    assertErrorShape(await call('+14155550132'), 429, 'concurrency_limit_exceeded');
    t.services.jobs.start([t.services.callMonitor.name]);
    await until('the cancelled call to end', async () => {
      const row = await t.services.db.selectFrom('calls').select('status').where('id', '=', first.id).executeTakeFirstOrThrow();
      return row.status === 'failed' ? true : undefined;
    });
    assert.equal((await call('+14155550132')).statusCode, 201);
  });
});
