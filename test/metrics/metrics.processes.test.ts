/**
 * CALLGATE_METRICS_PORT in real server processes on both databases: a worker-only process (no API port)
 * is scraped and probed there; an api,worker process serves /metrics there only, behind its token.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { forEachDialect } from '../support/dialects.js';
import { parsePrometheusText, sampleValue } from '../support/prometheus-text.js';
import { freePort, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { eventually } from '../support/wait.js';

await forEachDialect('CALLGATE_METRICS_PORT in server processes', (dialect) => {
  let database: TestDatabase;
  const processes: ServerProcess[] = [];
  before(async () => {
    database = await createTestDatabase(dialect, { migrated: true });
  });
  after(async () => {
    await Promise.all(processes.map((server) => server.stop()));
    await database.drop();
  });

  describe('a worker-only process', () => {
    let metricsUrl: string;
    before(async () => {
      const port = await freePort();
      metricsUrl = `http://127.0.0.1:${port}`;
      processes.push(await startServerProcess({ env: { ...database.env, CALLGATE_ROLES: 'worker', CALLGATE_METRICS_PORT: String(port) } }));
    });

    it('serves its job metrics and Node’s on the metrics port', async () => {
      const samples = await eventually('the call monitor’s passes counted', async () => {
        const res = await fetch(`${metricsUrl}/metrics`);
        assert.equal(res.status, 200);
        const parsed = parsePrometheusText(await res.text());
        return (sampleValue(parsed, 'callgate_job_passes_total', { job: 'call-monitor', result: 'ok' }) ?? 0) > 0 ? parsed : undefined;
      });
      assert.ok((sampleValue(samples, 'process_resident_memory_bytes') ?? 0) > 0);
      assert.equal(sampleValue(samples, 'callgate_webhook_deliveries_pending'), 0);
    });

    it('answers /healthz there, its liveness probe', async () => {
      const res = await fetch(`${metricsUrl}/healthz`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'ok', database: dialect });
    });

    it('answers /readyz there with the worker’s checks', async () => {
      const res = await fetch(`${metricsUrl}/readyz`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), {
        status: 'ready',
        checks: { database: { status: 'ok' }, migrations: { status: 'ok' }, worker: { status: 'ok' } },
      });
    });
  });

  describe('an api,worker process with a token', () => {
    const token = 'scrape-token-0123456789abcdef';
    let server: ServerProcess;
    let metricsUrl: string;
    before(async () => {
      const port = await freePort();
      metricsUrl = `http://127.0.0.1:${port}`;
      server = await startServerProcess({ env: { ...database.env, CALLGATE_METRICS_PORT: String(port), CALLGATE_METRICS_TOKEN: token } });
      processes.push(server);
    });

    it('keeps /metrics off the API port', async () => {
      const res = await fetch(`${server.url}/metrics`);
      assert.equal(res.status, 404);
      assert.equal(((await res.json()) as { error: string }).error, 'not_found');
      assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
    });

    it('serves it on the metrics port with the token only, counting the API’s requests', async () => {
      const refused = await fetch(`${metricsUrl}/metrics`);
      assert.equal(refused.status, 401);
      assert.equal(((await refused.json()) as { error: string }).error, 'unauthorized');
      const res = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const samples = parsePrometheusText(await res.text());
      // The readiness probe above went through the API port; the scrapes here are not counted as API traffic.
      assert.ok((sampleValue(samples, 'callgate_http_requests_total', { route: '/readyz', method: 'GET', status: '200' }) ?? 0) >= 1);
      assert.equal(sampleValue(samples, 'callgate_http_requests_total', { route: '/metrics', method: 'GET', status: '401' }), undefined);
    });
  });
});
