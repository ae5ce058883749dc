/**
 * The first start on an empty database: the demo account, agent and test key, and the banner's curl
 * command, pasted into a real shell against the real app, places calls (a new Idempotency-Key each paste,
 * with or without uuidgen). The portal's quick start shows the same command (createCallCurl).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import net from 'node:net';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase, type Db } from '../../src/db/database.js';
import { loadConfig } from '../../src/config.js';
import { cliSettingsFor, demoBanner, seedDemoIfEmpty, type DemoSeed } from '../../src/features/bootstrap/demo-seed.js';
import { repoRoot } from '../support/repo-root.js';
import { systemClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { listenOnFreePort } from '../support/http-client.js';
import { until } from '../support/wait.js';

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
    for (const table of [
      'webhook_attempts',
      'webhook_deliveries',
      'webhook_events',
      'webhook_endpoints',
      'idempotency_keys',
      'request_logs',
      'api_keys',
      'agents',
      'portal_sessions',
      'portal_form_tokens',
      'users',
      'accounts',
    ] as const) {
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

  it("the banner's sign-in hint, pasted into a shell, adds the user on the server's database and names the server's portal", async () => {
    assert.ok(seed);
    // A server on another port (and, on SQLite, another data folder) than a CLI given nothing would assume.
    const config = loadConfig({ ...t.database.env, PORT: '3999' });
    const banner = demoBanner(seed, config.publicUrl, cliSettingsFor(config));
    const hint = banner
      .split('\n')
      .find((line) => line.includes('sign-in user: '))
      ?.split('sign-in user: ')[1];
    assert.ok(hint);
    // npx would run bin/callgate.js (the built CLI); here the same CLI runs from source.
    const script = `npx() { shift; node --import tsx src/cli/bin.ts "$@"; }\n${hint.replace("'…'", "'correct horse battery'")}`;
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CALLGATE_|DATABASE_URL$|PORT$|HOST$)/.test(name)));
    const { stdout } = await run('bash', ['-c', script], { cwd: repoRoot, env });
    assert.ok(stdout.includes(`Sign in at http://127.0.0.1:3999/developers`), stdout);
    const user = await t.services.db.selectFrom('users').select('account_id').where('email', '=', 'you@example.com').executeTakeFirst();
    assert.equal(user?.account_id, seed.accountId);
  });
});

async function seededRows(db: Db): Promise<{ accounts: number; agents: number; keys: number }> {
  const count = async (table: 'accounts' | 'agents' | 'api_keys') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<string | number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { accounts: await count('accounts'), agents: await count('agents'), keys: await count('api_keys') };
}

await forEachDialect('Demo seed: once, whatever the number of processes starting', (dialect) => {
  let database: TestDatabase;
  after(async () => database?.drop());

  it('three server processes started at once on a fresh database seed one demo account', async () => {
    database = await createTestDatabase(dialect);
    // Migrated beforehand, so that the processes do not queue on the migration lock but reach the seed together.
    const migrated = openDatabase(database.config);
    await migrateToLatest(migrated.db).finally(() => migrated.destroy());
    const env = { ...database.env, CALLGATE_DEMO_SEED: 'true' };
    const started = await Promise.allSettled([1, 2, 3].map(() => startServerProcess({ env })));
    const servers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    try {
      for (const result of started) if (result.status === 'rejected') throw result.reason;
      // /healthz answers once a process listens; it seeds (or not) and prints its start line after that.
      await until('every start line', () => (servers.every((server) => /^callgate: portal /m.test(server.output())) ? true : undefined));
      const banners = servers.filter((server: ServerProcess) => server.output().includes('created a demo account'));
      assert.equal(banners.length, 1, servers.map((server) => server.output()).join('\n----\n'));
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
    }
    const handle = openDatabase(database.config);
    try {
      assert.deepEqual(await seededRows(handle.db), { accounts: 1, agents: 1, keys: 1 });
    } finally {
      await handle.destroy();
    }
  });

  it('many seeds racing in one process seed one demo account', async () => {
    const fresh = await createTestDatabase(dialect);
    const handle = openDatabase(fresh.config);
    try {
      await migrateToLatest(handle.db);
      // Connections opened beforehand (PostgreSQL's pool opens them on demand): the seeds then check at the
      // same moment, instead of the first one seeding while the others still connect.
      await Promise.all(Array.from({ length: 6 }, () => sql`select 1`.execute(handle.db)));
      const seeds = await Promise.all(Array.from({ length: 6 }, () => seedDemoIfEmpty(handle.db, systemClock)));
      assert.equal(seeds.filter((seed) => seed !== null).length, 1);
      assert.deepEqual(await seededRows(handle.db), { accounts: 1, agents: 1, keys: 1 });
    } finally {
      await handle.destroy();
      await fresh.drop();
    }
  });
});

await forEachDialect('Demo seed: a first start that cannot listen', (dialect) => {
  let database: TestDatabase;
  after(async () => database?.drop());

  it('seeds nothing; the next start prints the key, and every later one the account with how to get a key', async () => {
    database = await createTestDatabase(dialect);
    // Whoever holds the port: it hangs up on every connection, /healthz included.
    const blocker = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const busyPort = (blocker.address() as net.AddressInfo).port;
    const env = { ...database.env, CALLGATE_DEMO_SEED: 'true' };
    try {
      await assert.rejects(startServerProcess({ env, port: busyPort }), /EADDRINUSE/);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    const handle = openDatabase(database.config);
    try {
      assert.deepEqual(await seededRows(handle.db), { accounts: 0, agents: 0, keys: 0 }, 'the key was not lost with the failed start');
    } finally {
      await handle.destroy();
    }

    // Wait for the line printed once the start is done: /healthz answers before it.
    const started = async () => {
      const server = await startServerProcess({ env });
      await until('the start line', () => (/^ {2}demo account: .*$/m.test(server.output()) ? true : undefined));
      return server;
    };
    const first = await started();
    const firstOutput = first.output();
    await first.stop();
    assert.match(firstOutput, /created a demo account/);
    const token = /test key: (cg_test_[0-9a-f]{64})/.exec(firstOutput)?.[1];
    assert.ok(token, firstOutput);
    const accountId = /account: +(acct_[0-9a-z]+)/.exec(firstOutput)![1]!;
    assert.match(
      firstOutput,
      new RegExp(`^callgate: portal ${first.url}/developers · API reference ${first.url}/docs · guides in docs/`, 'm'),
    );
    assert.match(firstOutput, new RegExp(`^ {2}demo account: ${accountId} \\(its test key is printed above\\)$`, 'm'));
    assert.match(firstOutput, new RegExp(`npx callgate webhooks create --account ${accountId} --url `), 'the webhook step');
    assert.match(firstOutput, /CALLGATE_WEBHOOK_ALLOW_PRIVATE=true/);

    const second = await started();
    const secondOutput = second.output();
    await second.stop();
    assert.doesNotMatch(secondOutput, /created a demo account|cg_test_/);
    assert.match(secondOutput, new RegExp(`^callgate: portal ${second.url}/developers`, 'm'));
    const hint = new RegExp(
      `^ {2}demo account: ${accountId}; a test key for it: (.*npx callgate keys create --account ${accountId} .*)$`,
      'm',
    ).exec(secondOutput)?.[1];
    assert.ok(hint, secondOutput);
    // The hint, pasted into a shell, makes a test key on the server's database (npx runs the CLI from source here).
    const script = `npx() { shift; node --import tsx src/cli/bin.ts "$@"; }\n${hint}`;
    const shellEnv = Object.fromEntries(
      Object.entries(process.env).filter(([name]) => !/^(CALLGATE_|DATABASE_URL$|PORT$|HOST$)/.test(name)),
    );
    const { stdout } = await run('bash', ['-c', script], { cwd: repoRoot, env: shellEnv });
    assert.match(stdout, new RegExp(`Created test key key_[0-9a-z]+ for account ${accountId}\\.`));
  });
});
