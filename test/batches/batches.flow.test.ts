/**
 * Batches end to end on both databases with the worker running in real time: every recipient is dialed,
 * never more than max_concurrency at once (on PostgreSQL by two workers on one database, sharing one
 * simulator that counts what it sees), every placed call ends with its signed event carrying batch_id and
 * reference, and the batch ends with a signed batch.completed for the endpoints that want it. A single
 * call keeps exactly the spec's shape, and endpoints made before batches keep receiving what they did.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/container.js';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import * as batchesMigration from '../../src/db/migrations/0009-batches.js';
import * as callFiltersMigration from '../../src/db/migrations/0025-call-filters.js';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { createSimulatorProvider, simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { systemClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { createTestDatabase } from '../support/test-database.js';
import { startTestApp, testEnvDefaults, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';
import { callEventFields, startWebhookReceiver, verifyWebhook, type WebhookReceiver } from '../support/webhook-receiver.js';
import { allRecipients, apiGet, createBatch, highestOverlap, numbers, readBatch } from '../support/batch-client.js';

const callMs = 60;
const maxConcurrency = 3;

await forEachDialect('Batches end to end', (dialect) => {
  const simulator = createSimulatorProvider({ clock: systemClock, delayMs: callMs });
  const overrides = {
    providers: createProviderRegistry({ simulator }),
    dialerSweepIntervalMs: 200,
    monitorSweepIntervalMs: 200,
    dispatcherSweepIntervalMs: 200,
  };
  let t: TestApp;
  let secondWorker: Services | undefined;
  let everything: WebhookReceiver;
  let callsOnly: WebhookReceiver;
  let everythingSecret: string;
  let callsOnlySecret: string;

  before(async () => {
    t = await startTestApp(dialect, { startWorker: true, overrides });
    if (dialect === 'postgres') {
      // A second worker on the same database, as a second process would be (processes: batches.processes.test.ts).
      secondWorker = await createServices(loadConfig({ ...testEnvDefaults, ...t.database.env }), overrides);
      secondWorker.startWorker();
    }
    everything = await startWebhookReceiver();
    callsOnly = await startWebhookReceiver();
    const { db, clock } = t.services;
    everythingSecret = (await createEndpoint(db, clock, true, { accountId: t.seed.accountId, url: everything.url })).secret;
    callsOnlySecret = (
      await createEndpoint(db, clock, true, {
        accountId: t.seed.accountId,
        url: callsOnly.url,
        eventTypes: ['call.completed', 'call.failed'],
      })
    ).secret;
  });
  after(async () => {
    await secondWorker?.close();
    await t?.close();
    await everything?.close();
    await callsOnly?.close();
  });

  const verified = (receiver: WebhookReceiver, secret: string) => receiver.received.map((hook) => verifyWebhook(hook, secret));

  it(`dials every recipient, never more than ${maxConcurrency} at once, each call with its event, then batch.completed`, async () => {
    const tos = [...numbers(30), simulatorMagicNumbers.busy, simulatorMagicNumbers.refused];
    const batch = await createBatch(t, tos, { max_concurrency: maxConcurrency, name: 'End to end' });
    const done = await until(
      'the batch to complete',
      async () => {
        const now = await readBatch(t, batch.id);
        return now.status === 'completed' ? now : undefined;
      },
      60_000,
    );
    assert.deepEqual(done.counts, { total: 32, queued: 0, dialing: 0, in_progress: 0, completed: 30, failed: 2, cancelled: 0 });

    // The provider's view: never more than the limit, and the limit was used.
    assert.equal(simulator.stats().placed, 31);
    assert.equal(simulator.stats().highestConcurrency, maxConcurrency);
    // The database's: each call from its creation to its end (the simulator ends it callMs later).
    const calls = await t.services.db.selectFrom('calls').selectAll().where('batch_id', '=', batch.id).execute();
    assert.equal(calls.length, 31);
    const spans = calls.map((call) => ({ start: Date.parse(call.created_at), end: Date.parse((call.ended_at ?? call.failed_at)!) }));
    assert.ok(highestOverlap(spans) <= maxConcurrency, `overlap ${highestOverlap(spans)}`);

    const recipients = await allRecipients(t, batch.id);
    const byCall = new Map(recipients.filter((r) => r.call_id).map((r) => [r.call_id as string, r]));
    assert.equal(byCall.size, 31);
    assert.deepEqual(recipients.at(-1), { ...recipients.at(-1), status: 'failed', failure_reason: 'provider_error' });
    assert.equal(recipients.at(-2)!.failure_reason, 'busy');
    for (const call of calls) {
      const shown = (await apiGet(t, `/v1/calls/${call.id}`)).json();
      assert.equal(shown.batch_id, batch.id);
      assert.equal(shown.reference, byCall.get(call.id)!.reference);
      assert.equal(shown.status, byCall.get(call.id)!.status);
    }

    // Every placed call's event, signed, once, with batch_id and reference; then batch.completed.
    const ofBatch = (payloads: Record<string, any>[]) => payloads.filter((p) => p.data.batch_id === batch.id || p.data.id === batch.id);
    const delivered = await until('every event of the batch', () => {
      const payloads = ofBatch(verified(everything, everythingSecret));
      return payloads.length >= 32 ? payloads : undefined;
    });
    const callEvents = delivered.filter((p) => p.type !== 'batch.completed');
    assert.deepEqual(new Set(callEvents.map((p) => p.data.id)), new Set(calls.map((call) => call.id)));
    assert.equal(callEvents.length, 31, 'one event per call');
    for (const event of callEvents) {
      assert.equal(event.data.reference, byCall.get(event.data.id)!.reference);
      assert.equal(event.type, byCall.get(event.data.id)!.status === 'completed' ? 'call.completed' : 'call.failed');
    }
    const completed = delivered.filter((p) => p.type === 'batch.completed');
    assert.equal(completed.length, 1);
    assert.deepEqual(completed[0]!.data, done);
    assert.match(completed[0]!.id, /^evt_/);

    // The endpoint that wants the call events only gets those.
    const onlyCalls = await until('the call events at the calls-only endpoint', () => {
      const payloads = ofBatch(verified(callsOnly, callsOnlySecret));
      return payloads.length >= 31 ? payloads : undefined;
    });
    assert.ok(onlyCalls.every((p) => p.type === 'call.completed' || p.type === 'call.failed'));
  });

  it('a single call keeps exactly its shape: no batch_id or reference in GET /v1/calls/{id} nor in its event', async () => {
    const created = await t.createCall({ agent_id: t.seed.agentId, to: '+14155550123' });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().id as string;
    const event = await until("the single call's event", () => verified(everything, everythingSecret).find((p) => p.data.id === id));
    assert.deepEqual(Object.keys(event.data).sort(), callEventFields);
    const shown = (await apiGet(t, `/v1/calls/${id}`)).json();
    assert.ok(!('batch_id' in shown) && !('reference' in shown));
  });
});

await forEachDialect('Webhook endpoints made before batches (migration 0009)', (dialect) => {
  it('an endpoint that wanted every type ("*") then keeps the two call events; "*" now means every type', async () => {
    const database = await createTestDatabase(dialect);
    const handle = openDatabase(database.config);
    try {
      await migrateToLatest(handle.db);
      // As a rollback would: the later migration that indexes 0009's columns first (SQLite drops no indexed column).
      await callFiltersMigration.down(handle.db);
      await batchesMigration.down(handle.db);
      const at = '2026-01-01T00:00:00.000Z';
      await handle.db.insertInto('accounts').values({ id: 'acct_old', name: 'Old', created_at: at }).execute();
      const endpoint = (id: string, eventTypes: string[]) => ({
        id,
        account_id: 'acct_old',
        url: 'https://hooks.example.com/x',
        description: '',
        enabled: 1,
        event_types: JSON.stringify(eventTypes),
        secret: 'whsec_x',
        previous_secret: null,
        previous_secret_expires_at: null,
        disabled_reason: null,
        failing_since: null,
        created_at: at,
        updated_at: at,
        deleted_at: null,
      });
      await handle.db
        .insertInto('webhook_endpoints')
        .values([endpoint('we_all', ['*']), endpoint('we_completed', ['call.completed'])])
        .execute();
      await batchesMigration.up(handle.db);
      const rows = await handle.db.selectFrom('webhook_endpoints').select(['id', 'event_types']).orderBy('id').execute();
      assert.deepEqual(rows, [
        { id: 'we_all', event_types: '["call.completed","call.failed"]' },
        { id: 'we_completed', event_types: '["call.completed"]' },
      ]);
    } finally {
      await handle.destroy();
      await database.drop();
    }
  });
});
