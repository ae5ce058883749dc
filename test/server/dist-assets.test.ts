/**
 * `npm run build` makes a dist/ that runs on its own: built into a directory that holds only dist/, the
 * package.json and the installed packages (no src/), the server starts and serves the portal's stylesheet
 * and script, byte for byte the files in src/. Built here rather than taken from the checkout's dist/, which
 * may be older than the sources or being rebuilt by another test.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';
import { freePort, serverProcessEnvDefaults } from '../support/server-process.js';
import { until } from '../support/wait.js';

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-dist-'));
let server: ChildProcess | undefined;
after(() => {
  server?.kill('SIGKILL');
  fs.rmSync(workDir, { recursive: true, force: true });
});

function run(command: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(command, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

it('the built server serves the portal assets from dist/, with no src/ beside it', { timeout: 300_000 }, async () => {
  const build = await run(process.execPath, ['scripts/build.mjs', '--out-dir', path.join(workDir, 'dist')]);
  assert.equal(build.code, 0, build.output);
  // What an installed copy holds: its package.json ("type": "module") and node_modules, but no sources.
  fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(workDir, 'package.json'));
  fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(workDir, 'node_modules'), 'dir');
  assert.ok(!fs.existsSync(path.join(workDir, 'src')));

  const port = await freePort();
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(CALLGATE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$)/.test(name)),
  );
  const child = spawn(process.execPath, ['dist/server.js'], {
    cwd: workDir,
    env: { ...inherited, ...serverProcessEnvDefaults, CALLGATE_DATA_DIR: path.join(workDir, 'data'), PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server = child;
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  const base = `http://127.0.0.1:${port}`;
  await until(
    'the built server to answer /healthz',
    async () => {
      assert.equal(child.exitCode, null, `the server exited early:\n${output}`);
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
    assert.equal(await response.text(), fs.readFileSync(path.join(repoRoot, 'src/features/portal/assets', name), 'utf8'), name);
  }

  child.kill('SIGTERM');
  const code = await new Promise<number | null>((resolve) =>
    child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', resolve),
  );
  assert.equal(code, 0, output);
});
