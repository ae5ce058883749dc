/** Forking a bench script (`node --import tsx`, or as JavaScript) and waiting for its answers over the IPC channel. */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { transpiledScript } from './transpile.js';

/**
 * How `npm start` runs the server (package.json's start script, `exec env NAME=value … node <flags> dist/server.js`):
 * its environment settings and node flags, so that a server under the bench's load runs with the memory settings
 * of production.
 */
export function startCommand(): { env: Record<string, string>; nodeFlags: string[] } {
  const manifest = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } };
  const start = manifest.scripts.start;
  const match = /^exec(?: env((?: [A-Z_]+=\S+)+))? node((?: --\S+)*) dist\/server\.js$/.exec(start);
  if (!match) throw new Error(`package.json's start script is not "exec [env NAME=value …] node [--flag …] dist/server.js": "${start}"`);
  const env = Object.fromEntries(
    (match[1] ?? '')
      .trim()
      .split(' ')
      .filter(Boolean)
      .map((pair) => pair.split('=', 2) as [string, string]),
  );
  return { env, nodeFlags: (match[2] ?? '').trim().split(' ').filter(Boolean) };
}

/**
 * The environment a service child starts from: a free port on loopback, no database URL or Redis (the
 * database's own env comes in `extra`), no demo data, the API and the worker; `extra` adds to it or overrides it.
 */
export function serviceEnv(logLevel: string, extra: Record<string, string>): Record<string, string> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: '',
    REDIS_URL: '',
    CALLGATE_DEMO_SEED: 'false',
    CALLGATE_ROLES: 'api,worker',
    CALLGATE_LOG_LEVEL: logLevel,
    ...extra,
  };
}

/** Every child speaks in messages with a `type`; `failed` ends any wait with the child's error. */
export interface ChildMessage {
  readonly type: string;
}

export interface BenchChild<M extends ChildMessage, P> {
  readonly pid: number;
  /** Resolves with the exit code once the process has ended. */
  readonly exited: Promise<number | null>;
  next<T extends M['type']>(type: T, timeoutMs: number): Promise<Extract<M, { type: T }>>;
  /** Sends `message` and waits for the answer of type `answer`. */
  ask<T extends M['type']>(message: P, answer: T, timeoutMs: number): Promise<Extract<M, { type: T }>>;
  kill(): void;
}

/**
 * Forks `script` with tsx (and `nodeOptions`), or with `javascript` transpiled first and run by plain node (see
 * transpile.ts: no tsx thread in the process whose memory is measured); its standard output (the service's logs)
 * goes to `logFile`.
 */
export function forkBenchScript<M extends ChildMessage, P>(
  script: URL,
  args: readonly string[],
  options: { env: Record<string, string>; logFile: string; nodeOptions?: readonly string[]; javascript?: boolean },
): BenchChild<M, P> {
  const log = fs.openSync(options.logFile, 'w');
  const child = fork(options.javascript ? transpiledScript(script) : script, [...args], {
    execArgv: [...(options.javascript ? [] : ['--import', 'tsx']), ...(options.nodeOptions ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', log, 'inherit', 'ipc'],
  });
  fs.closeSync(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    pid: child.pid ?? 0,
    exited,
    next: (type, timeoutMs) => nextMessage<M, typeof type>(child, type, timeoutMs),
    async ask(message, answer, timeoutMs) {
      const reply = nextMessage<M, typeof answer>(child, answer, timeoutMs);
      child.send(message as object);
      return reply;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The next message of a type, or an error when the child fails, exits or stays silent. */
export function nextMessage<M extends ChildMessage, T extends M['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<M, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`child did not answer "${type}" within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: M & { message?: string }) => {
      if (message.type === 'failed') done(new Error(`child failed: ${message.message ?? '(no message)'}`));
      else if (message.type === type) done(undefined, message as Extract<M, { type: T }>);
    };
    const onExit = (code: number | null) => done(new Error(`child exited (code ${code}) while waiting for "${type}"`));
    function done(error: Error | undefined, message?: Extract<M, { type: T }>) {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(message!);
    }
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
