/** The parent's side of bench/serve-target.ts: fork it, wait until it listens, ask it questions, stop it. */
import { forkBenchScript, startCommand } from './child-process.js';
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
  // As JavaScript, with the settings and flags of `npm start`: the server's memory is what production's would be.
  const start = startCommand();
  const child = forkBenchScript<TargetMessage, ParentMessage>(new URL('./serve-target.ts', import.meta.url), [kind], {
    ...options,
    env: { ...start.env, ...options.env },
    javascript: true,
    nodeOptions: start.nodeFlags,
  });
  const ready = await child.next('ready', startTimeoutMs);
  const ask = <T extends TargetMessage['type']>(message: ParentMessage, answer: T) => child.ask(message, answer, answerTimeoutMs);
  return {
    pid: child.pid,
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
      const timer = setTimeout(() => child.kill(), answerTimeoutMs);
      await child.exited;
      clearTimeout(timer);
      return calls;
    },
    kill: () => child.kill(),
  };
}
