/**
 * Runs the operator CLI for tests. `runCli` calls the CLI in this process (src/cli/main.ts, the code the
 * process entry runs, minus argv and the streams): no tsx start per command, so a suite of many commands
 * takes seconds. `spawnCli` starts a real process, for the few tests of the entry itself.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { runCli as runCliInProcess } from '../../src/cli/main.js';
import { repoRoot } from './repo-root.js';

/** The installed entry (`npx callgate`) and the compiled file it imports. */
export const binEntry = path.join(repoRoot, 'bin/callgate.js');
export const distEntry = path.join(repoRoot, 'dist/cli/bin.js');
const sourceEntry = path.join(repoRoot, 'src/cli/bin.ts');
/** Generous: a cold tsx start on a busy two-core machine takes a few seconds. */
const processTimeoutMs = 60_000;

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of the test process without its own database settings, plus the given ones. */
export function cliEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, CALLGATE_LOG_LEVEL: 'silent', ...extra };
  if (!('DATABASE_URL' in extra)) delete env.DATABASE_URL;
  if (!('CALLGATE_DATA_DIR' in extra)) delete env.CALLGATE_DATA_DIR;
  if (!('CALLGATE_WEBHOOK_ALLOW_PRIVATE' in extra)) delete env.CALLGATE_WEBHOOK_ALLOW_PRIVATE;
  if (!('ELEVENLABS_API_KEY' in extra)) delete env.ELEVENLABS_API_KEY;
  return env;
}

/** One command line, in this process; output is collected as the process entry would write it. */
export async function runCli(env: NodeJS.ProcessEnv, args: readonly string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCliInProcess(args, env, {
    stdout: (text) => void (stdout += `${text}\n`),
    stderr: (text) => void (stderr += `${text}\n`),
  });
  return { code, stdout, stderr };
}

/** Runs a command with --json and checks the contract: exit 0, silence on stderr, one JSON object on one line. */
export async function runJson(env: NodeJS.ProcessEnv, args: readonly string[]): Promise<Record<string, any>> {
  const run = await runCli(env, [...args, '--json']);
  assert.equal(run.stderr, '', `stderr of ${args.join(' ')}`);
  assert.equal(run.code, 0);
  assert.match(run.stdout, /^[^\n]+\n$/, 'one line');
  const value: unknown = JSON.parse(run.stdout);
  assert.ok(value !== null && typeof value === 'object' && !Array.isArray(value), 'a JSON object');
  return value as Record<string, any>;
}

/** Runs a command that must fail: the given exit code, a message on stderr, nothing on stdout. */
export async function runFailing(env: NodeJS.ProcessEnv, args: readonly string[], code: number, message: RegExp): Promise<void> {
  const run = await runCli(env, args);
  assert.equal(run.code, code, `exit code of ${args.join(' ')} (stderr: ${run.stderr})`);
  assert.match(run.stderr, message);
  assert.equal(run.stdout, '');
}

/**
 * One command line as a real process: `bin` runs bin/callgate.js (which needs `npm run build`), `source`
 * runs src/cli/bin.ts through tsx.
 */
export function spawnCli(entry: 'bin' | 'source', env: NodeJS.ProcessEnv, args: readonly string[]): Promise<CliRun> {
  const nodeArgs = entry === 'bin' ? [binEntry] : ['--import', 'tsx', sourceEntry];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, ...args], { cwd: repoRoot, env, timeout: processTimeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

export function isBuilt(): boolean {
  return fs.existsSync(distEntry);
}
