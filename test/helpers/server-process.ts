/**
 * Starts the real server (`node --import tsx src/server.ts`) as a child process on a free port, for tests
 * that need what only a process has: several processes sharing one database, or a kill -9 mid-flight.
 * The child gets a clean environment (no CALLGATE_* or DATABASE_URL of the test run leaks in), the
 * database env of a TestDatabase, and generous rate limits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ServerProcess {
  /** Base URL, e.g. http://127.0.0.1:43121 (no trailing slash). */
  readonly url: string;
  readonly pid: number;
  /** SIGTERM, then wait for the exit (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL, as a crash would, and wait for the exit. */
  kill(): Promise<void>;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
}

export interface ServerProcessOptions {
  /** Usually `TestDatabase.env` plus any setting under test. */
  readonly env: Record<string, string>;
  /** How long to wait for GET /healthz to answer. */
  readonly startTimeoutMs?: number;
}

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Variables that configure the server; inherited values are dropped so only `env` decides. */
const serverEnvPattern = /^(CALLGATE_|DATABASE_URL$|REDIS_URL$|PORT$|HOST$)/;

export const serverProcessEnvDefaults: Record<string, string> = {
  HOST: '127.0.0.1',
  CALLGATE_LOG_LEVEL: 'warn',
  CALLGATE_DEMO_SEED: 'false',
  CALLGATE_RATE_LIMIT_PER_MINUTE: '1000000',
  CALLGATE_IP_RATE_LIMIT_PER_MINUTE: '1000000',
  CALLGATE_SIMULATOR_DELAY_MS: '50',
};

const outputLimitChars = 20_000;
const running = new Set<ChildProcess>();

// A test run that dies must not leave servers holding ports and databases.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A port nobody listens on right now (the OS picks it; the tiny race is covered by a retry on start). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('could not get a free port');
  return address.port;
}

function childEnv(env: Record<string, string>, port: number): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !serverEnvPattern.test(name)));
  return { ...inherited, ...serverProcessEnvDefaults, ...env, PORT: String(port) };
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) });
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

async function startOnce(options: ServerProcessOptions, port: number): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/server.ts'], {
    cwd: repoRoot,
    env: childEnv(options.env, port),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-outputLimitChars);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const url = `http://127.0.0.1:${port}`;
  const exited = waitForExit(child);
  const kill = async () => {
    child.kill('SIGKILL');
    await exited;
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server process exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${output}`);
    }
    if (await healthy(url)) break;
    if (Date.now() > deadline) {
      await kill();
      throw new Error(`server process did not answer GET /healthz within the start timeout:\n${output}`);
    }
    await sleep(50);
  }

  return {
    url,
    pid: child.pid ?? -1,
    output: () => output,
    kill,
    async stop(graceMs = 12_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Starts a server process and resolves once GET /healthz answers 200. */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, await freePort());
    } catch (error) {
      // Another process may have taken the port between freePort() and listen: try a new one.
      const portTaken = error instanceof Error && error.message.includes('EADDRINUSE');
      if (!portTaken || attempt >= 3) throw error;
    }
  }
}
