/**
 * What the README starts, `npm start`, stops with one SIGTERM to the npm process: the node server gets the
 * signal, logs "shutting down" and exits, instead of living on under PID 1 after npm and its shell are gone.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';
import { eventually } from '../support/wait.js';
import { freePort, serverProcessEnvDefaults } from '../support/server-process.js';

const serverEntry = path.join(repoRoot, 'dist/server.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

let serverPid: number | undefined;
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-npm-start-'));
after(() => {
  if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

it('SIGTERM to `npm start` stops the node server gracefully', { timeout: 180_000 }, async () => {
  // `npm install` builds dist (prepare); a checkout that skipped it is built here, as npm would have.
  if (!fs.existsSync(serverEntry)) {
    const build = spawn('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'ignore' });
    const code = await new Promise<number | null>((resolve) => build.once('exit', resolve));
    assert.equal(code, 0, 'npm run build');
  }
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^(CALLGATE_|DATABASE_URL$|REDIS_URL$|PORT$)/.test(name)),
  );
  const npm = spawn('npm', ['start'], {
    cwd: repoRoot,
    env: {
      ...inherited,
      ...serverProcessEnvDefaults,
      CALLGATE_LOG_LEVEL: 'info',
      CALLGATE_DATA_DIR: dataDir,
      PORT: String(await freePort()),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  npm.stderr.on('data', (chunk: Buffer) => void (output += chunk.toString('utf8')));
  const npmExited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));

  // The server logs its own pid in every line; its "running" line says it is ready.
  const running = await eventually(
    'the server to log "callgate is running"',
    async () => {
      const line = output.split('\n').find((text) => text.includes('"callgate is running"'));
      return line ? (JSON.parse(line) as { pid: number }) : undefined;
    },
    60_000,
  );
  serverPid = running.pid;
  assert.notEqual(serverPid, npm.pid);

  npm.kill('SIGTERM');
  await npmExited;
  const pid = serverPid;
  await eventually(`the server process ${pid} to end`, async () => (alive(pid) ? undefined : true), 15_000).catch((error: Error) => {
    throw new Error(`${error.message}; output:\n${output}`);
  });
  assert.match(output, /"signal":"SIGTERM","msg":"shutting down"/, output);
});
