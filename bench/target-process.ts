/** The parent's side of bench/serve-target.ts: fork it, wait until it listens, ask it questions, stop it. */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { CallCounts, ParentMessage, TargetKind, TargetMessage, TargetSample } from './serve-target.js';

export interface Target {
  readonly pid: number;
  readonly url: string;
  readonly tokens: readonly string[];
  readonly agentId: string;
  sample(): Promise<TargetSample>;
  startProfile(): Promise<void>;
  stopProfile(file: string): Promise<void>;
  /** Closes the server in order and waits for the process to end; returns the calls it stored. */
  stop(): Promise<CallCounts | null>;
  kill(): void;
}

const startTimeoutMs = 60_000;
const answerTimeoutMs = 30_000;

export interface StartOptions {
  readonly env: Record<string, string>;
  /** The target's standard output (the service's logs) goes to this file. */
  readonly logFile: string;
}

export async function startTarget(kind: TargetKind, options: StartOptions): Promise<Target> {
  const log = fs.openSync(options.logFile, 'w');
  const child = fork(new URL('./serve-target.ts', import.meta.url), [kind], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', log, 'inherit', 'ipc'],
  });
  fs.closeSync(log);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const ready = await next(child, 'ready', startTimeoutMs);
  const ask = async <T extends TargetMessage['type']>(message: ParentMessage, answer: T) => {
    const reply = next(child, answer, answerTimeoutMs);
    child.send(message);
    return reply;
  };
  return {
    pid: child.pid ?? 0,
    url: `http://127.0.0.1:${ready.port}`,
    tokens: ready.tokens,
    agentId: ready.agentId,
    async sample() {
      return (await ask({ type: 'sample' }, 'sample')).sample;
    },
    async startProfile() {
      await ask({ type: 'profile-start' }, 'profile-started');
    },
    async stopProfile(file) {
      await ask({ type: 'profile-stop', file }, 'profile-stopped');
    },
    async stop() {
      const { calls } = await ask({ type: 'stop' }, 'stopped');
      const timer = setTimeout(() => child.kill('SIGKILL'), answerTimeoutMs);
      await exited;
      clearTimeout(timer);
      return calls;
    },
    kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** The next message of a type, or an error when the target fails, exits or stays silent. */
function next<T extends TargetMessage['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<TargetMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`target did not answer "${type}" within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (message: TargetMessage) => {
      if (message.type === 'failed') done(new Error(`target failed: ${message.message}`));
      else if (message.type === type) done(undefined, message as Extract<TargetMessage, { type: T }>);
    };
    const onExit = (code: number | null) => done(new Error(`target exited (code ${code}) while waiting for "${type}"`));
    function done(error: Error | undefined, message?: Extract<TargetMessage, { type: T }>) {
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
