/**
 * The built server, from one `npm run build` made here into a directory that holds only dist/, the
 * package.json and the installed packages (no src/), as an installed copy does. Built here rather than taken
 * from the checkout's dist/, which may be older than the sources or being rebuilt by another test; built
 * once for both tests:
 * - it starts and serves the portal's stylesheet and script, byte for byte the files in src/;
 * - what the README starts, `npm start`, stops with one SIGTERM to the npm process: the node server gets the
 *   signal, logs "shutting down" and exits, instead of living on under PID 1 after npm and its shell are gone.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';
import { freePort, serverProcessEnvDefaults } from '../support/server-process.js';
import { eventually, until } from '../support/wait.js';

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-dist-'));
const pids: number[] = [];
after(() => {
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  fs.rmSync(workDir, { recursive: true, force: true });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

/** The built server's environment: none of this run's server settings, a data directory of its own, a free port. */
async function serverEnv(dataDir: string, extra: Record<string, string> = {}): Promise<NodeJS.ProcessEnv> {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(CALLGATE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$)/.test(name)),
  );
  return {
    ...inherited,
    ...serverProcessEnvDefaults,
    ...extra,
    CALLGATE_DATA_DIR: path.join(workDir, dataDir),
    PORT: String(await freePort()),
  };
}

/** Starts `command` in the built copy, collecting its output. */
function startBuilt(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd: workDir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid !== undefined) pids.push(child.pid);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // 'close' comes once every process writing to the pipes (npm's server too) is gone and all was read.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, exited, closed, output: () => output };
}

before(
  async () => {
    const build = await run(process.execPath, ['scripts/build.mjs', '--out-dir', path.join(workDir, 'dist')]);
    assert.equal(build.code, 0, build.output);
    // What an installed copy holds: its package.json ("type": "module") and node_modules, but no sources.
    fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(workDir, 'package.json'));
    fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(workDir, 'node_modules'), 'dir');
    assert.ok(!fs.existsSync(path.join(workDir, 'src')));
  },
  { timeout: 300_000 },
);

it('the built server serves the portal assets from dist/, with no src/ beside it', { timeout: 120_000 }, async () => {
  const env = await serverEnv('assets');
  const server = startBuilt(process.execPath, ['dist/server.js'], env);
  const base = `http://127.0.0.1:${env.PORT}`;
  await until(
    'the built server to answer /healthz',
    async () => {
      assert.equal(server.child.exitCode, null, `the server exited early:\n${server.output()}`);
      return (await fetch(`${base}/healthz`).catch(() => undefined))?.ok || undefined;
    },
    60_000,
  );

  for (const [name, type] of [
    ['portal.css', /^text\/css/],
    ['portal.js', /^text\/javascript/],
  ] as const) {
    const response = await fetch(`${base}/developers/assets/${name}`);
    assert.equal(response.status, 200, name);
    assert.match(String(response.headers.get('content-type')), type, name);
    assert.equal(await response.text(), fs.readFileSync(path.join(repoRoot, 'src/portal/assets', name), 'utf8'), name);
  }

  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0, server.output());
});

it('SIGTERM to `npm start` stops the node server gracefully', { timeout: 120_000 }, async () => {
  const npm = startBuilt('npm', ['start'], await serverEnv('npm-start', { CALLGATE_LOG_LEVEL: 'info' }));

  // The server logs its own pid in every line; its "running" line says it is ready.
  const running = await eventually(
    'the server to log "callgate is running"',
    async () => {
      const line = npm
        .output()
        .split('\n')
        .find((text) => text.includes('"callgate is running"'));
      return line ? (JSON.parse(line) as { pid: number }) : undefined;
    },
    60_000,
  );
  const serverPid = running.pid;
  pids.push(serverPid);
  assert.notEqual(serverPid, npm.child.pid);

  npm.child.kill('SIGTERM');
  await npm.exited;
  await eventually(`the server process ${serverPid} to end`, async () => (alive(serverPid) ? undefined : true), 15_000).catch(
    (error: Error) => {
      throw new Error(`${error.message}; output:\n${npm.output()}`);
    },
  );
  // npm may exit before its server: the server's last lines are read only once the pipes close.
  await npm.closed;
  assert.match(npm.output(), /"signal":"SIGTERM","msg":"shutting down"/, npm.output());
});

it('a second build of the same sources does nothing and leaves dist/ as it was (npx in a clone runs it under a running server)', {
  timeout: 60_000,
}, async () => {
  const out = path.join(workDir, 'dist');
  const entry = path.join(out, 'server.js');
  const before = fs.statSync(entry).mtimeMs;
  const again = await run(process.execPath, ['scripts/build.mjs', '--out-dir', out]);
  assert.equal(again.code, 0, again.output);
  assert.match(again.output, /is up to date with src\//);
  assert.equal(fs.statSync(entry).mtimeMs, before, 'dist/ was not rewritten');
});
