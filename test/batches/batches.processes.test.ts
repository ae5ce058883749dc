/**
 * The batch dialer across real server processes (`node --import tsx src/server.ts`):
 * - two worker processes on one PostgreSQL database dial one batch, and at no instant are more than its
 *   max_concurrency calls of it under way;
 * - on both databases, a worker killed with SIGKILL while the provider (a fake ElevenLabs that holds the
 *   request) is placing a call leaves a recorded dial: the next worker finds that call at the provider and
 *   gives it to the recipient, which is never dialed a second time, and completes every recipient.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { signElevenLabs } from '../../src/features/providers/elevenlabs/elevenlabs.signature.js';
import { forEachDialect } from '../support/dialects.js';
import { elevenLabsEnv, transcriptionEvent, webhookSecret } from '../support/elevenlabs-fixtures.js';
import { processesOf, request, seededDatabase, withFakeElevenLabs } from '../support/seeded-processes.js';
import { until } from '../support/wait.js';
import { highestOverlap, numbers, recipientsFor } from '../support/batch-client.js';
import { letEveryWorkerDial, workerDialed } from '../support/batch-workers.js';

await forEachDialect('Two worker processes dialing one batch', (dialect) => {
  if (dialect === 'sqlite') {
    // Several processes share one database on PostgreSQL only (docs/deployment.md); the SQLite runs are in-process.
    it('runs on PostgreSQL', { skip: 'workers in several processes share a PostgreSQL database only' });
    return;
  }
  const maxConcurrency = 4;
  let seeded: Awaited<ReturnType<typeof seededDatabase>>;
  const processes = processesOf();
  before(async () => {
    seeded = await seededDatabase(dialect);
  });
  after(async () => {
    await processes.stopAll();
    await seeded?.handle.destroy();
    await seeded?.database.drop();
  });

  it(`never has more than max_concurrency (${maxConcurrency}) calls of the batch under way, with both workers dialing`, async () => {
    const env = { ...seeded.database.env, CALLGATE_SIMULATOR_DELAY_MS: '300' };
    const api = await processes.start({ ...env, CALLGATE_ROLES: 'api' });
    const workers = [
      await processes.start({ ...env, CALLGATE_ROLES: 'worker', CALLGATE_LOG_LEVEL: 'debug' }),
      await processes.start({ ...env, CALLGATE_ROLES: 'worker', CALLGATE_LOG_LEVEL: 'debug' }),
    ];
    const created = await request('POST', `${api.url}/v1/batches`, seeded.seed.token, {
      agent_id: seeded.seed.agentId,
      max_concurrency: maxConcurrency,
      recipients: recipientsFor(numbers(60)),
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const batchId = created.json.id as string;
    const readBatch = async () => (await request('GET', `${api.url}/v1/batches/${batchId}`, seeded.seed.token)).json;

    // Both workers share the batch (one is stopped for a moment while the other has not dialed).
    await until('a first call to end', async () => ((await readBatch()).counts.completed > 0 ? true : undefined), 60_000);
    await letEveryWorkerDial(seeded.handle.db, batchId, workers);
    for (const [index, worker] of workers.entries())
      assert.ok(workerDialed(worker), `worker ${index + 1} dialed nothing:\n${worker.output().slice(-2000)}`);

    const done = await until(
      'the batch to complete',
      async () => {
        const batch = await readBatch();
        return batch.status === 'completed' ? batch : undefined;
      },
      120_000,
    );
    assert.equal(done.counts.completed, 60);
    const calls = await seeded.handle.db.selectFrom('calls').select(['created_at', 'ended_at']).where('batch_id', '=', batchId).execute();
    assert.equal(calls.length, 60);
    // Each call from its creation to its end as the simulator made it (300 ms later): a slot frees only
    // once a monitor saw that end, so these spans are the calls under way as the provider sees them.
    const overlap = highestOverlap(calls.map((call) => ({ start: Date.parse(call.created_at), end: Date.parse(call.ended_at!) })));
    assert.ok(overlap <= maxConcurrency, `${overlap} calls of the batch were under way at once`);
    assert.ok(overlap >= 2, `the limit was never approached (${overlap})`);
  });
});

await forEachDialect('A worker killed while dialing', (dialect) => {
  const hangingTo = '+14155559000';
  const processes = processesOf();
  // The call to this number is placed, but the provider's answer hangs until long after the worker is gone.
  const suite = withFakeElevenLabs(dialect, processes, (req) =>
    req.route === 'outbound' && (req.body as { to_number?: string } | null)?.to_number === hangingTo
      ? { status: 500, delayMs: 12_000, place: true }
      : undefined,
  );

  it("finds that recipient's call at the provider after a restart (its dial was recorded), never dials it again, and completes every recipient", async () => {
    const { seeded, fake } = suite;
    const env = {
      ...seeded.database.env,
      ...elevenLabsEnv(fake, { CALLGATE_PROVIDER_TIMEOUT_MS: '3000', CALLGATE_BATCH_DIAL_LEASE_MS: '4000' }),
    };
    const api = await processes.start({ ...env, CALLGATE_ROLES: 'api' });
    const first = await processes.start({ ...env, CALLGATE_ROLES: 'worker' });
    const tos = [hangingTo, ...numbers(3, 7000)];
    const created = await request('POST', `${api.url}/v1/batches`, seeded.seed.token, {
      agent_id: 'agent_el_twilio',
      max_concurrency: 1,
      recipients: recipientsFor(tos),
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const batchId = created.json.id as string;
    const recipients = async () =>
      (await request('GET', `${api.url}/v1/batches/${batchId}/recipients`, seeded.seed.token)).json.data as Record<string, any>[];
    const dialsTo = (to: string) =>
      fake.requestsTo('outbound').filter((req) => (req.body as { to_number: string }).to_number === to).length;

    await until('the provider to be asked for the first call', () => (dialsTo(hangingTo) === 1 ? true : undefined));
    assert.equal((await recipients())[0]!.status, 'dialing');
    const exit = await first.kill();
    assert.equal(exit.signal, 'SIGKILL');

    // The new worker takes up the dial its dead asker left (after the provider's timeout and a margin),
    // finds the placed call by the dial id, and gives it to the recipient.
    await processes.start({ ...env, CALLGATE_ROLES: 'worker' });
    const found = await until(
      'the dial to be found',
      async () => {
        const [recipient] = await recipients();
        return recipient!.status === 'in_progress' ? recipient : undefined;
      },
      60_000,
    );
    const [placed] = fake.conversationsOfDial(
      (await seeded.handle.db.selectFrom('dials').select('id').where('to_number', '=', hangingTo).executeTakeFirstOrThrow()).id,
    );
    assert.equal(found!.call_id, `call_${placed!.conversation_id}`);

    // The others are dialed one at a time; each call ends when "ElevenLabs" sends its post-call webhook.
    const ended = new Set<string>();
    await until(
      'every other recipient to complete',
      async () => {
        const open = await seeded.handle.db
          .selectFrom('calls')
          .select('provider_conversation_id')
          .where('batch_id', '=', batchId)
          .where('status', '=', 'initiated')
          .execute();
        for (const { provider_conversation_id: conversationId } of open) {
          if (ended.has(conversationId)) continue;
          const body = JSON.stringify(
            transcriptionEvent(conversationId, { startSecs: Math.floor(Date.now() / 1000) - 30, durationSecs: 20, summary: 'Reminded.' }),
          );
          const res = await fetch(`${api.url}/providers/elevenlabs/webhook`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'elevenlabs-signature': signElevenLabs(webhookSecret, Math.floor(Date.now() / 1000), body),
            },
            body,
          });
          assert.equal(res.status, 200, await res.text());
          ended.add(conversationId);
        }
        const all = await recipients();
        return all.every((recipient) => recipient.status === 'completed') ? all : undefined;
      },
      60_000,
    );
    assert.equal(dialsTo(hangingTo), 1, 'the recipient whose answer was lost was never dialed again');
    for (const to of tos.slice(1)) assert.equal(dialsTo(to), 1, to);
    const batch = await until('the batch to complete', async () => {
      const now = (await request('GET', `${api.url}/v1/batches/${batchId}`, seeded.seed.token)).json;
      return now.status === 'completed' ? now : undefined;
    });
    assert.deepEqual(batch.counts, { total: 4, queued: 0, dialing: 0, in_progress: 0, completed: 4, failed: 0, cancelled: 0 });
    const events = await seeded.handle.db.selectFrom('webhook_events').select('type').where('type', '=', 'batch.completed').execute();
    assert.equal(events.length, 1);
  });
});
