/**
 * Two webhook dispatchers on one database, each with a runner of its own as in two worker processes, on
 * both databases. A dispatcher wakes itself the moment its attempts end, and used to take every slot of an
 * endpoint that they freed before any other worker looked: beside it, a worker that was not woken found
 * the endpoint full at each sweep and made next to no attempts. Each now holds at most its part of an
 * endpoint's slots, so a worker that is never woken still finds work at its sweep and makes its share, and
 * one that stops leaves its part to the others.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, it } from 'node:test';
import pino from 'pino';
import { enqueueEvents } from '../../src/features/webhook-delivery/fan-out.service.js';
import { WebhookDispatcher } from '../../src/features/webhook-delivery/webhook-dispatcher.job.js';
import type { WebhookSender } from '../../src/features/webhook-delivery/webhook-sender.js';
import { createEndpoint } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { JobRunner, type WakeSignal } from '../../src/jobs/job-runner.js';
import { systemClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

const answerMs = 20;
const endpointConcurrency = 4;
const logger = pino({ level: 'silent' });

/** What one worker did: its attempts, when the first began, and the most it had in flight at once. */
interface Worker {
  readonly runner: JobRunner;
  readonly dispatcher: WebhookDispatcher;
  sent: number;
  firstAt: number | undefined;
}

await forEachDialect('Webhook workers sharing an endpoint', (dialect) => {
  let t: TestApp;
  const runners: JobRunner[] = [];
  /** Attempts in flight over every worker, and the most at once: never over the endpoint's cap. */
  let open = 0;
  let mostOpen = 0;

  beforeEach(async () => {
    t = await startTestApp(dialect);
    open = 0;
    mostOpen = 0;
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((runner) => runner.stop(1_000)));
    await t.close();
  });

  /** A worker as a process has it: its own runner and dispatcher, woken by `wakeOn` if given, else by its sweep only. */
  function startWorker(options: { wakeOn?: WakeSignal; sweepIntervalMs: number }): Worker {
    const runner = new JobRunner({ clock: systemClock, logger });
    const sender: WebhookSender = {
      async send() {
        worker.sent++;
        worker.firstAt ??= Date.now();
        mostOpen = Math.max(mostOpen, ++open);
        await sleep(answerMs);
        open--;
        return { kind: 'response', status: 200, excerpt: 'ok', retryAfter: undefined, durationMs: answerMs };
      },
      close() {},
    };
    const dispatcher = new WebhookDispatcher({
      db: t.services.db,
      clock: systemClock,
      logger,
      runner,
      sender,
      retryScheduleMs: [100],
      timeoutMs: 5_000,
      concurrency: 16,
      endpointConcurrency,
      sweepIntervalMs: options.sweepIntervalMs,
      ...(options.wakeOn ? { wakeOn: options.wakeOn } : {}),
    });
    const worker: Worker = { runner, dispatcher, sent: 0, firstAt: undefined };
    runners.push(runner);
    runner.start();
    return worker;
  }

  /** `count` deliveries due now to one endpoint (test events, written at once). */
  async function backlog(count: number): Promise<string> {
    const endpoint = await createEndpoint(t.services.db, t.services.clock, true, {
      accountId: t.seed.accountId,
      url: 'https://example.com/hooks',
    });
    const event = { accountId: t.seed.accountId, mode: null, type: 'webhook.test' as const, callId: null, endpointId: endpoint.id };
    await enqueueEvents(
      t.services.db,
      t.services.clock,
      Array.from({ length: count }, () => ({ ...event, data: { endpoint_id: endpoint.id } })),
    );
    return endpoint.id;
  }

  const succeeded = async (endpointId: string) =>
    Number(
      (
        await t.services.db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .where('endpoint_id', '=', endpointId)
          .where('status', '=', 'succeeded')
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('a worker whose wake-ups never come delivers within its sweep, and beside one that wakes itself it makes its share', async () => {
    const deliveries = 200;
    const sweepMs = 200;
    // The woken worker starts first and is told of the backlog: it has a head start on every slot.
    const woken = startWorker({ wakeOn: t.services.notifier, sweepIntervalMs: 60_000 });
    const deaf = startWorker({ sweepIntervalMs: sweepMs });
    const startedAt = Date.now();
    const endpointId = await backlog(deliveries);
    t.services.notifier.notify();
    await until('every delivery to succeed', async () => ((await succeeded(endpointId)) === deliveries ? true : undefined), 60_000);

    assert.equal(woken.sent + deaf.sent, deliveries, 'one attempt per delivery');
    assert.ok(
      deaf.firstAt !== undefined && deaf.firstAt - startedAt < sweepMs + 1_000,
      `the deaf worker began ${deaf.firstAt! - startedAt} ms in`,
    );
    for (const [name, worker] of [['woken', woken] as const, ['deaf', deaf] as const]) {
      assert.ok(worker.sent >= deliveries * 0.3, `the ${name} worker made ${worker.sent} of ${deliveries} attempts`);
    }
    assert.ok(mostOpen <= endpointConcurrency, `${mostOpen} attempts in flight to the endpoint at once`);
  });

  it('a worker alone, or left alone when the other stops, fills every slot of the endpoint', async () => {
    const first = startWorker({ wakeOn: t.services.notifier, sweepIntervalMs: 100 });
    const second = startWorker({ wakeOn: t.services.notifier, sweepIntervalMs: 100 });
    const endpointId = await backlog(100);
    t.services.notifier.notify();
    await until('both workers to deliver', () => (first.sent > 0 && second.sent > 0 ? true : undefined), 30_000);
    // The second stops (and hands its part back): the first takes the whole cap from its next claim.
    await second.runner.stop(1_000);
    mostOpen = 0;
    const sentBefore = first.sent;
    await until('every delivery to succeed', async () => ((await succeeded(endpointId)) === 100 ? true : undefined), 60_000);
    assert.ok(first.sent - sentBefore >= 40, `the first worker made ${first.sent - sentBefore} attempts once alone`);
    assert.equal(mostOpen, endpointConcurrency, 'alone, the first worker had the whole cap in flight');
    const live = await t.services.db.selectFrom('webhook_workers').select('id').execute();
    assert.deepEqual(
      live.map((row) => row.id),
      [first.dispatcher.workerId],
      'the stopped worker deleted its row',
    );
  });
});
