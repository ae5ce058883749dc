/**
 * Two worker processes on one PostgreSQL database share a large batch's dials. The batch dialer is woken
 * through the same notifier as the webhook dispatcher (a call of the batch ended, in either process): each
 * worker must dial its share, not leave the other idle. Each worker's dials are read from its own metrics
 * (`callgate_calls_placed_total`: a worker places no call but a batch's), as an operator would.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { numbers, recipientsFor } from '../support/batch-client.js';
import { forEachDialect } from '../support/dialects.js';
import { parsePrometheusText } from '../support/prometheus-text.js';
import { processesOf, request, seededDatabase } from '../support/seeded-processes.js';
import { freePort } from '../support/server-process.js';
import { until } from '../support/wait.js';

const recipients = 1_000;

await forEachDialect('Two worker processes sharing a batch', (dialect) => {
  if (dialect === 'sqlite') {
    it('runs on PostgreSQL', { skip: 'workers in several processes share a PostgreSQL database only' });
    return;
  }
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

  it(`each worker places at least 30 % of a ${recipients}-recipient batch's calls`, async (t) => {
    const env = { ...seeded.database.env, CALLGATE_SIMULATOR_DELAY_MS: '200' };
    const api = await processes.start({ ...env, CALLGATE_ROLES: 'api' });
    const metricsPorts = [await freePort(), await freePort()];
    await Promise.all(
      metricsPorts.map((port) => processes.start({ ...env, CALLGATE_ROLES: 'worker', CALLGATE_METRICS_PORT: String(port) })),
    );
    const placedBy = async (port: number) => {
      const samples = parsePrometheusText(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      return samples.filter((sample) => sample.name === 'callgate_calls_placed_total').reduce((sum, sample) => sum + sample.value, 0);
    };

    const created = await request('POST', `${api.url}/v1/batches`, seeded.seed.token, {
      agent_id: seeded.seed.agentId,
      max_concurrency: 50,
      recipients: recipientsFor(numbers(recipients)),
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const batchId = created.json.id as string;
    const done = await until(
      'the batch to complete',
      async () => {
        const batch = (await request('GET', `${api.url}/v1/batches/${batchId}`, seeded.seed.token)).json;
        return batch.status === 'completed' ? batch : undefined;
      },
      // About 15 s on a quiet machine; on two cores shared with other test runs it has taken up to 3 minutes.
      300_000,
    );
    assert.equal(done.counts.completed, recipients);

    const placed = await Promise.all(metricsPorts.map(placedBy));
    t.diagnostic(`calls placed by worker: ${placed.join(', ')}`);
    assert.equal(placed[0]! + placed[1]!, recipients, `calls placed by worker: ${placed.join(', ')}`);
    for (const [index, count] of placed.entries()) {
      assert.ok(count >= 0.3 * recipients, `worker ${index + 1} placed ${count} of ${recipients} calls (the other ${placed[1 - index]})`);
    }
  });
});
