/**
 * The first start on an empty database: the demo account, agent and test key, and the banner's curl
 * command, pasted into a real shell against the real app, places calls (a new Idempotency-Key each paste,
 * with or without uuidgen). The portal's quick start shows the same command (createCallCurl).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import { demoBanner, seedDemoIfEmpty, type DemoSeed } from '../../src/features/bootstrap/demo-seed.js';
import { forEachDialect } from '../helpers/dialects.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { listenOnFreePort } from '../idempotency/http-client.js';

const run = promisify(execFile);

await forEachDialect('Demo seed and its banner', (dialect) => {
  let t: TestApp;
  let url: string;
  let seed: DemoSeed | null;
  before(async () => {
    t = await startTestApp(dialect);
    url = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('seeds only an empty database', async () => {
    // The test app has its own accounts already: nothing is seeded there.
    assert.equal(await seedDemoIfEmpty(t.services.db, t.services.clock), null);
    await t.services.db.deleteFrom('calls').execute();
    for (const table of ['webhook_attempts', 'webhook_deliveries', 'webhook_events', 'webhook_endpoints', 'idempotency_keys', 'request_logs', 'api_keys', 'agents', 'portal_sessions', 'portal_form_tokens', 'users', 'accounts'] as const) {
      await t.services.db.deleteFrom(table).execute();
    }
    seed = await seedDemoIfEmpty(t.services.db, t.services.clock);
    assert.ok(seed);
    assert.match(seed.token, /^cg_test_[0-9a-f]{64}$/);
    assert.equal(await seedDemoIfEmpty(t.services.db, t.services.clock), null, 'a second start seeds nothing');
  });

  it("the banner's curl command, pasted into a shell, places a call each time it is pasted", async () => {
    assert.ok(seed);
    const banner = demoBanner(seed, url);
    assert.ok(banner.includes(seed.token) && banner.includes(seed.accountId) && banner.includes(`${url}/developers`));
    const lines = banner.split('\n');
    const first = lines.findIndex((line) => line.trimStart().startsWith('curl '));
    const command = lines.slice(first, lines.findIndex((line, i) => i > first && !line.endsWith('\\')) + 1).join('\n');
    // As pasted where uuidgen is missing (Debian's default) and, if this machine has it, where it is present.
    const paths = ['/usr/bin:/bin', process.env.PATH ?? ''];
    const ids = new Set<string>();
    for (const path of paths) {
      for (let paste = 0; paste < 2; paste++) {
        const { stdout } = await run('bash', ['-c', command], { env: { PATH: path } });
        const created = JSON.parse(stdout) as { id: string; status: string };
        assert.equal(created.status, 'initiated', stdout);
        ids.add(created.id);
      }
    }
    assert.equal(ids.size, 4, 'every paste placed its own call');
  });
});
