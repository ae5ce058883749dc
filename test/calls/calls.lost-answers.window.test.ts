/**
 * The search window (CALLGATE_DIAL_SEARCH_WINDOW) is the operator's word on how soon the provider lists a
 * call it placed. A window shorter than the first look's few seconds is kept, with a look halfway and one
 * at its end: a lost dial that placed nothing is known at the window's end (its key freed, its retry
 * placing the call), not after the first look the default window would give. A dial whose asker died and that is taken over after its window has ended
 * still gets one look before it counts as not placed. On a manual clock; the dial job is driven by hand.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { beginDial } from '../../src/features/calls/dials.service.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { addElevenLabsAgents, apiKey, elevenLabsEnv, providerTimeoutMs, workspaceNumbers } from '../support/elevenlabs-fixtures.js';
import { startFakeElevenLabs, type FakeElevenLabs } from '../support/fake-elevenlabs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const searchWindowMs = providerTimeoutMs + 500;

await forEachDialect('A search window shorter than the first look', (dialect) => {
  const clock = new ManualClock();
  let fake: FakeElevenLabs;
  let t: TestApp;
  before(async () => {
    fake = await startFakeElevenLabs({ apiKey, now: () => clock.now().getTime() });
    fake.phoneNumbers = structuredClone(workspaceNumbers);
    t = await startTestApp(dialect, {
      env: elevenLabsEnv(fake, { CALLGATE_DIAL_SEARCH_WINDOW: `${searchWindowMs}ms` }),
      startWorker: true,
      overrides: { clock, dialSweepIntervalMs: 24 * 3_600_000 },
    });
    await addElevenLabsAgents(t);
  });
  after(async () => {
    await t?.close();
    await fake?.close();
  });

  async function dialRow(id: string) {
    return t.services.db.selectFrom('dials').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  }

  it('ends a lost dial that placed nothing at the end of the window, and the retry with its key places the call', async () => {
    const key = `window-${dialect}`;
    const to = '+14155554000';
    fake.queue('outbound', { status: 200, destroy: true });
    const first = await t.createCall({ agent_id: 'agent_el_twilio', to }, { idempotencyKey: key });
    assert.equal(first.statusCode, 503, first.body);
    const lost = await t.services.db.selectFrom('dials').selectAll().where('idempotency_key', '=', key).executeTakeFirstOrThrow();
    assert.equal(lost.state, 'checking');
    assert.equal(Date.parse(lost.search_until) - Date.parse(lost.asked_at), searchWindowMs);
    // The manual clock stands still: the answer was lost as the dial was asked.
    const half = searchWindowMs / 2;
    assert.equal(Date.parse(lost.due_at) - Date.parse(lost.asked_at), half, 'the first look is halfway through the window');

    clock.advance(half);
    await t.services.dialJob.pass();
    const looked = await dialRow(lost.id);
    assert.equal(looked.state, 'checking', looked.history);
    assert.equal(looked.looks, 1);
    assert.equal(looked.due_at, looked.search_until, 'the last look is at the end of the window');

    clock.advance(searchWindowMs - half);
    await t.services.dialJob.pass();
    const ended = await dialRow(lost.id);
    assert.equal(ended.state, 'not_placed', ended.history);
    assert.match(ended.history, /after 2 looks/);

    const retry = await t.createCall({ agent_id: 'agent_el_twilio', to }, { idempotencyKey: key });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(fake.requestsTo('outbound').filter((request) => (request.body as { to_number?: string }).to_number === to).length, 2);
  });

  it('looks once for the dial of a dead asker taken over after its window, then counts it as not placed', async () => {
    const { db } = t.services;
    const agent = await db.selectFrom('agents').selectAll().where('agent_id', '=', 'agent_el_twilio').executeTakeFirstOrThrow();
    const apiKeyRow = { id: t.seed.keyId, account_id: t.seed.accountId, mode: 'live' as const };
    // Recorded and never asked about again: its process died before the provider's answer.
    const dial = await beginDial({ db, clock, dials: { searchWindowMs, providerTimeoutMs } }, { apiKey: apiKeyRow }, agent, 'elevenlabs', {
      to: '+14155554001',
      metadata: null,
    });
    await t.services.dialJob.pass();
    assert.equal((await dialRow(dial.id)).state, 'asking', 'its asker may still be waiting for the provider');

    const lookupsBefore = fake.requests.length;
    // The asker's wait and its margin have passed: the window ended long before.
    clock.advance(Date.parse(dial.due_at) - clock.now().getTime());
    await t.services.dialJob.pass();
    const ended = await dialRow(dial.id);
    assert.equal(ended.state, 'not_placed', ended.history);
    assert.match(ended.history, /after 1 looks/);
    assert.ok(fake.requests.length > lookupsBefore, 'the provider was asked before the dial counted as not placed');
  });
});
