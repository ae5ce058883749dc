/**
 * The per-endpoint cap holds across worker processes: two workers on one database (PostgreSQL, and SQLite's
 * one file too) never have more than CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY attempts in flight to one
 * endpoint between them. (Each holds at most its half of them, so both deliver: webhooks.workers.test.ts and
 * the two-worker test of webhooks.processes.test.ts check the shares.)
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/container.js';
import { enqueueEvents } from '../../src/features/webhook-delivery/fan-out.service.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { seedAccount, testEnvDefaults } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { mostOpenAtOnce, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';
import { until } from '../support/wait.js';

const deliveries = 60;

await forEachDialect('Fair webhook delivery across worker processes', (dialect) => {
  let database: TestDatabase;
  let receiver: WebhookReceiver;
  const processes: ServerProcess[] = [];

  beforeEach(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
    receiver = await startWebhookReceiver();
    // Each answer takes 300 ms: with no cap, two workers would have all 60 in flight at once.
    receiver.fallback = { status: 200, delayMs: 300 };
  });
  afterEach(async () => {
    await Promise.all(processes.splice(0).map((server) => server.kill()));
    await receiver.close();
    await database.drop();
  });

  it('two workers never have more than 4 attempts in flight to one endpoint between them', async () => {
    const services = await createServices(loadConfig({ ...testEnvDefaults, ...database.env }));
    try {
      const seed = await seedAccount(services);
      const endpoint = await createEndpoint(services.db, services.clock, true, { accountId: seed.accountId, url: receiver.url });
      const event = { accountId: seed.accountId, mode: null, type: 'webhook.test' as const, callId: null, endpointId: endpoint.id };
      await enqueueEvents(
        services.db,
        services.clock,
        Array.from({ length: deliveries }, () => ({ ...event, data: { endpoint_id: endpoint.id } })),
      );
    } finally {
      await services.close();
    }
    const env = {
      ...database.env,
      CALLGATE_ROLES: 'worker',
      CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
      CALLGATE_WEBHOOK_ENDPOINT_CONCURRENCY: '4',
    };
    processes.push(...(await Promise.all([startServerProcess({ env }), startServerProcess({ env })])));
    await receiver.waitFor(deliveries, 60_000);
    await until('every answer', () => (receiver.received.every((hook) => hook.answeredAt !== undefined) ? true : undefined));
    assert.ok(mostOpenAtOnce(receiver.received, 9_000) <= 4, `at most 4 in flight, saw ${mostOpenAtOnce(receiver.received, 9_000)}`);
    assert.equal(new Set(receiver.received.map((hook) => hook.headers['webhook-id'])).size, deliveries);
  });
});
