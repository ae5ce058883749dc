/**
 * The local-webhook path as a new operator meets it: an endpoint saved for 127.0.0.1 (the CLI had
 * CALLGATE_WEBHOOK_ALLOW_PRIVATE=true) while the server runs without the setting. The delivery's error says
 * that the server needs the setting and a restart, and the server logs every attempt: endpoint, event,
 * result and duration, successes at info and failures at warn, without the URL or the body.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { eventually } from '../support/wait.js';
import { memoryLogs, type MemoryLogs } from '../support/memory-logs.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

interface LogLine {
  level: number;
  msg: string;
  endpoint_id?: string;
  event_id?: string;
  result?: string;
  duration_ms?: number;
  error?: string | null;
}

const parsed = (logs: MemoryLogs): LogLine[] => logs.lines.map((line) => JSON.parse(line) as LogLine);

for (const allowPrivate of [false, true]) {
  describe(`A delivery to a local receiver, server ${allowPrivate ? 'with' : 'without'} CALLGATE_WEBHOOK_ALLOW_PRIVATE`, () => {
    let t: TestApp;
    let logs: MemoryLogs;
    let receiver: WebhookReceiver;
    before(async () => {
      logs = memoryLogs();
      receiver = await startWebhookReceiver();
      t = await startTestApp('sqlite', {
        env: {
          CALLGATE_WEBHOOK_ALLOW_PRIVATE: String(allowPrivate),
          CALLGATE_SIMULATOR_DELAY_MS: '30',
          CALLGATE_WEBHOOK_RETRY_SCHEDULE: '1h',
        },
        startWorker: true,
        overrides: { logger: logs.logger, monitorSweepIntervalMs: 20, dispatcherSweepIntervalMs: 20 },
      });
    });
    after(async () => {
      await t.close();
      await receiver.close();
    });

    it(allowPrivate ? 'is delivered and logged at info' : 'fails saying what to do, and is logged at info', async () => {
      // Saved as the CLI does when its own environment allows private targets.
      const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: t.seed.accountId, url: receiver.url });
      const created = await t.createCall(callBody(t));
      assert.equal(created.statusCode, 201);
      const line = await eventually('the log line of the attempt', async () =>
        parsed(logs).find((entry) => entry.msg === 'webhook delivered' || entry.msg === 'webhook attempt failed'),
      );
      const event = await t.services.db.selectFrom('webhook_events').select('id').executeTakeFirstOrThrow();
      assert.equal(line.endpoint_id, endpoint.id);
      assert.equal(line.event_id, event.id);
      assert.equal(typeof line.duration_ms, 'number');
      assert.ok(!JSON.stringify(line).includes(receiver.url), 'no URL in the log');
      assert.ok(!JSON.stringify(line).includes('transcript'), 'no body in the log');
      // The line is logged as the attempt ends; its record is written just after, in the dispatcher's next batch.
      const delivery = await eventually('the attempt recorded on its delivery', async () => {
        const row = await t.services.db
          .selectFrom('webhook_deliveries')
          .select(['status', 'last_error', 'attempt_count'])
          .executeTakeFirstOrThrow();
        return row.attempt_count > 0 ? row : undefined;
      });
      if (allowPrivate) {
        assert.equal(line.level, 30, 'info');
        assert.equal(line.result, 'succeeded');
        assert.equal(receiver.received.length, 1);
      } else {
        assert.equal(line.level, 30, 'info: a retry is routine; only a disabled endpoint is logged at warn');
        assert.equal(line.result, 'retrying');
        assert.equal(receiver.received.length, 0);
        const advice =
          /127\.0\.0\.1 is not a public address; to deliver to local or private addresses, start the server with CALLGATE_WEBHOOK_ALLOW_PRIVATE=true \(and restart it\)/;
        assert.match(line.error ?? '', advice);
        assert.match(delivery.last_error ?? '', advice);
      }
    });
  });
}
