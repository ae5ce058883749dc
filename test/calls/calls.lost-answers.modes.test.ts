/**
 * Lost answers as integrators rehearse them and operators watch them: the simulator's +15005550004 (placed,
 * answer lost) and +15005550005 (answer lost, nothing placed) with a test-mode key, a provider that cannot
 * be asked (the key stays held, callgate never guesses), and the dial metrics.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { createFakeProvider, failures } from '../support/fake-voice-provider.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { lostAnswerConversationId } from '../../src/features/providers/simulator.provider.js';

await forEachDialect('Lost answers in test mode: the magic numbers', (dialect) => {
  let t: TestApp;
  let testToken: string;
  before(async () => {
    t = await startTestApp(dialect, { startWorker: true, overrides: { dialSweepIntervalMs: 100 } });
    testToken = (await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' })).token;
  });
  after(async () => t.close());

  const create = (to: string, key: string) => t.createCall(callBody(t, { to }), { token: testToken, idempotencyKey: key });

  it('+15005550004: 504 first, then the call found is the 201 of a retry with the key, replayed, and its event follows', async () => {
    const key = `magic-4-${dialect}`;
    const first = await create('+15005550004', key);
    assert.equal(first.statusCode, 504, first.body);
    assert.equal(first.json().error, 'provider_timeout');
    assert.equal(first.headers['retry-after'], '4', 'the test search (3 s) and a look after it');
    const dialOf = await t.services.db.selectFrom('dials').selectAll().where('idempotency_key', '=', key).executeTakeFirstOrThrow();
    assert.match(first.json().message, /Retry after 4 seconds with the same key/);
    const found = await until('the call to be found', async () => {
      const retry = await create('+15005550004', key);
      if (retry.statusCode === 201) return retry;
      assert.equal(retry.statusCode, 504, retry.body);
      return undefined;
    });
    assert.equal(found.headers['idempotent-replayed'], 'true');
    const id = found.json().id as string;
    // Shaped as every call id (conv_ and 26 base32 digits, the first ten its time), not a form of its own.
    assert.match(id, /^call_conv_[0-9a-hjkmnp-tv-z]{26}$/);
    assert.equal(id, `call_${lostAnswerConversationId(dialOf.id, new Date(dialOf.asked_at))}`);
    const events = await until('its outcome event', async () => {
      const rows = await t.services.db.selectFrom('webhook_events').select('type').where('call_id', '=', id).execute();
      return rows.length > 0 ? rows : undefined;
    });
    assert.deepEqual(
      events.map((event) => event.type),
      ['call.completed'],
    );
  });

  it('+15005550005: 504 first; once the test search ends, a retry with the key places the call', async () => {
    const key = `magic-5-${dialect}`;
    const first = await create('+15005550005', key);
    assert.equal(first.statusCode, 504, first.body);
    const dial = await t.services.db.selectFrom('dials').selectAll().where('idempotency_key', '=', key).executeTakeFirstOrThrow();
    assert.equal(Date.parse(dial.search_until) - Date.parse(dial.asked_at), 3_000, 'a test dial is searched for 3 s');
    await until('the dial to end as not placed', async () => {
      const row = await t.services.db.selectFrom('dials').select('state').where('id', '=', dial.id).executeTakeFirstOrThrow();
      return row.state === 'not_placed' ? true : undefined;
    });
    // The key is free, and the simulator places the next dial to this number: the retry places the call.
    const retry = await create('+15005550005', key);
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined, 'a new call, not a replay');
    const dials = await t.services.db
      .selectFrom('dials')
      .select('state')
      .where('idempotency_key', '=', key)
      .orderBy('created_at')
      .execute();
    assert.deepEqual(
      dials.map((row) => row.state),
      ['not_placed', 'placed'],
    );
  });
});

await forEachDialect('Lost answers while the provider cannot be asked', (dialect) => {
  const clock = new ManualClock();
  const provider = createFakeProvider();
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, {
      overrides: { clock, providers: createProviderRegistry({ simulator: provider }), dialSweepIntervalMs: 24 * 3_600_000 },
    });
    t.services.jobs.start([t.services.dialJob.name]);
  });
  after(async () => t.close());

  it('keeps the key held and asks again with backoff, never guessing; once the provider answers, the call is found; the metrics count it', async () => {
    const key = `down-${dialect}`;
    provider.steps = [{ failure: failures.uncertain, placed: true }];
    provider.findFailure = failures.unavailable;
    const first = await t.createCall(callBody(t), { idempotencyKey: key });
    assert.equal(first.statusCode, 503, first.body);
    assert.equal(first.json().error, 'provider_unavailable');
    const dialId = (await t.services.db.selectFrom('dials').select('id').where('idempotency_key', '=', key).executeTakeFirstOrThrow()).id;
    const dial = () => t.services.db.selectFrom('dials').selectAll().where('id', '=', dialId).executeTakeFirstOrThrow();

    // Far past the search window, the provider still cannot be asked: the dial stays open, the key held.
    for (let look = 0; look < 6; look++) {
      clock.advance(10 * 60_000);
      await t.services.dialJob.pass();
    }
    const open = await dial();
    assert.equal(open.state, 'checking');
    assert.ok(open.looks >= 6, `${open.looks} looks`);
    assert.match(open.history, /could not be asked/);
    const retry = await t.createCall(callBody(t), { idempotencyKey: key });
    assert.equal(retry.statusCode, 503, retry.body);
    assert.match(retry.json().message, /checking with the provider/);
    assert.equal(provider.attempts, 1, 'never dialed again');

    const scrape = async () => parsePrometheusText((await t.inject({ method: 'GET', url: '/metrics' })).body);
    const before = await scrape();
    assert.equal(sampleValue(before, 'callgate_dials_unresolved'), 1);
    assert.ok((sampleValue(before, 'callgate_dial_oldest_unresolved_age_seconds') ?? 0) >= 3_600);
    assert.equal(sampleValue(before, 'callgate_dials_total', { result: 'lost' }), 1);

    provider.findFailure = undefined;
    clock.advance(10 * 60_000);
    await t.services.dialJob.pass();
    assert.equal((await dial()).state, 'found');
    const replay = await t.createCall(callBody(t), { idempotencyKey: key });
    assert.equal(replay.statusCode, 201, replay.body);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const afterFound = await scrape();
    assert.equal(sampleValue(afterFound, 'callgate_dials_total', { result: 'found' }), 1);
    assert.equal(sampleValue(afterFound, 'callgate_dials_unresolved'), 0);
  });
});
