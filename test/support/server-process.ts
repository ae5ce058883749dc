/**
 * Starts the real server as a child process on a free port, for tests that need what only a process has:
 * several processes sharing one database, or a kill -9 mid-flight. The process runs src/ as JavaScript
 * compiled here once per version of the sources (TypeScript's own transpileModule, as `npm run build`'s tsc
 * would emit it): loading the app through tsx's loader takes about 2.5 times the CPU, paid at every start.
 * The child gets a clean environment (no CALLGATE_* or DATABASE_URL of the test run leaks in), the
 * database env of a TestDatabase, and generous rate limits. A process without the api role serves no HTTP:
 * it counts as started once it logs "callgate is running".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { repoRoot } from './repo-root.js';

/** How a process ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  /** Base URL, e.g. http://127.0.0.1:43121 (no trailing slash); nothing listens there without the api role. */
  readonly url: string;
  readonly pid: number;
  /** Resolves when the process has ended, however it ended. */
  readonly exited: Promise<ProcessExit>;
  /** SIGTERM, then wait for the exit (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<ProcessExit>;
  /** SIGKILL, as a crash would, and wait for the exit. */
  kill(): Promise<ProcessExit>;
  /** Everything the process wrote to stdout and stderr so far (for failure messages). */
  output(): string;
}

export interface ServerProcessOptions {
  /** Usually `TestDatabase.env` plus any setting under test. */
  readonly env: Record<string, string>;
  /** How long to wait for the process to be ready. */
  readonly startTimeoutMs?: number;
  /**
   * What counts as ready: GET /healthz answering 200, or the "callgate is running" log line (logged at
   * info, so the level is lowered to info unless `env` sets one). Default: `log` when CALLGATE_ROLES in
   * `env` leaves out api, else `healthz`.
   */
  readonly readyWhen?: 'healthz' | 'log';
  /** Listen on this port (a test of a port in use); default a free one, tried again if taken meanwhile. */
  readonly port?: number;
}

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
const readyLogLine = 'callgate is running';
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

function waitForExit(child: ChildProcess): Promise<ProcessExit> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

function readiness(options: ServerProcessOptions): { readyWhen: 'healthz' | 'log'; env: Record<string, string> } {
  const roles = (options.env.CALLGATE_ROLES ?? 'api,worker').split(',').map((role) => role.trim());
  const readyWhen = options.readyWhen ?? (roles.includes('api') ? 'healthz' : 'log');
  if (readyWhen === 'healthz') return { readyWhen, env: options.env };
  const level = options.env.CALLGATE_LOG_LEVEL ?? 'info';
  if (!['info', 'debug', 'trace'].includes(level)) {
    throw new Error(`readyWhen 'log' needs CALLGATE_LOG_LEVEL info or lower, got ${level}`);
  }
  return { readyWhen, env: { ...options.env, CALLGATE_LOG_LEVEL: level } };
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

/**
 * Whether process `pid` holds the socket listening on `port`. Between freePort() and the child's listen,
 * another test's server may take the port; its /healthz would then answer for a child that failed to start.
 * Read from /proc (Linux); elsewhere the answer of /healthz is taken as it is.
 */
function listensOn(pid: number | undefined, port: number): boolean {
  if (pid === undefined || !fs.existsSync('/proc/net/tcp')) return true;
  const portHex = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = fs.existsSync(table) ? fs.readFileSync(table, 'utf8').split('\n').slice(1) : [];
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      // local_address is HEXADDR:HEXPORT, st 0A is LISTEN, the inode is the tenth field.
      if (fields[1]?.endsWith(`:${portHex}`) && fields[3] === '0A' && fields[9]) inodes.add(fields[9]);
    }
  }
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return inodes.has(/^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? '');
      } catch {
        return false; // closed meanwhile
      }
    });
  } catch {
    return false; // the process is gone
  }
}

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]));
}

let compiledEntry: string | undefined;

/**
 * src/server.js in a folder of the temporary directory named after the checkout and its sources' contents, with src/'s
 * other files (the portal's assets) beside their modules and the checkout's node_modules linked in. Made
 * by the first test process of a run that needs it; the others find it.
 */
async function compiledServerEntry(): Promise<string> {
  if (compiledEntry) return compiledEntry;
  const srcDir = path.join(repoRoot, 'src');
  const sources = filesUnder(srcDir).sort();
  // The checkout's path is part of the name: the copy links that checkout's node_modules, and a copy made
  // by another checkout (a clone since deleted) would hold a dangling link.
  const hash = createHash('sha256').update(repoRoot);
  for (const file of sources) hash.update(path.relative(srcDir, file)).update(fs.readFileSync(file));
  const target = path.join(os.tmpdir(), `callgate-test-server-${hash.digest('hex').slice(0, 16)}`);
  const entry = path.join(target, 'src/server.js');
  if (!fs.existsSync(entry) || !fs.existsSync(path.join(target, 'node_modules', 'fastify'))) {
    if (fs.existsSync(target)) fs.rmSync(target, { recursive: true, force: true });
    // Loaded only here: most test processes find the compiled copy made.
    const { default: ts } = await import('typescript');
    const { options } = ts.parseJsonConfigFileContent(
      ts.readConfigFile(path.join(repoRoot, 'tsconfig.json'), ts.sys.readFile).config,
      ts.sys,
      repoRoot,
    );
    // ESM as the package's "type" says (transpileModule cannot read package.json to learn it).
    const compilerOptions = { ...options, module: ts.ModuleKind.ESNext, sourceMap: false, declaration: false };
    const building = `${target}.${randomBytes(4).toString('hex')}`;
    for (const file of sources) {
      const out = path.join(building, 'src', path.relative(srcDir, file));
      fs.mkdirSync(path.dirname(out), { recursive: true });
      if (!file.endsWith('.ts')) {
        fs.copyFileSync(file, out);
        continue;
      }
      const { outputText } = ts.transpileModule(fs.readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
      fs.writeFileSync(out.replace(/\.ts$/, '.js'), outputText);
    }
    fs.copyFileSync(path.join(repoRoot, 'package.json'), path.join(building, 'package.json'));
    fs.symlinkSync(path.join(repoRoot, 'node_modules'), path.join(building, 'node_modules'), 'dir');
    try {
      fs.renameSync(building, target);
    } catch {
      // Another test process made it meanwhile: the same files.
      fs.rmSync(building, { recursive: true, force: true });
    }
    // Copies of older sources are left by earlier runs; those of the last day may still serve a run.
    for (const name of fs.readdirSync(os.tmpdir())) {
      const old = path.join(os.tmpdir(), name);
      if (name.startsWith('callgate-test-server-') && old !== target && Date.now() - fs.statSync(old).mtimeMs > 86_400_000) {
        fs.rmSync(old, { recursive: true, force: true });
      }
    }
  }
  compiledEntry = entry;
  return entry;
}

async function startOnce(options: ServerProcessOptions, port: number): Promise<ServerProcess> {
  const { readyWhen, env } = readiness(options);
  const child = spawn(process.execPath, [await compiledServerEntry()], {
    cwd: repoRoot,
    env: childEnv(env, port),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let output = '';
  let loggedReady = false;
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString('utf8')).slice(-outputLimitChars);
    // Noted at once: the line may later scroll out of the kept output.
    loggedReady ||= output.includes(readyLogLine);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const url = `http://127.0.0.1:${port}`;
  const exited = waitForExit(child);
  const kill = async () => {
    child.kill('SIGKILL');
    return exited;
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server process exited (${child.exitCode ?? child.signalCode}) before it was healthy:\n${output}`);
    }
    if (readyWhen === 'log' ? loggedReady : (await healthy(url)) && listensOn(child.pid, port)) break;
    if (Date.now() > deadline) {
      await kill();
      const awaited = readyWhen === 'log' ? `log "${readyLogLine}"` : 'answer GET /healthz';
      throw new Error(`server process did not ${awaited} within the start timeout:\n${output}`);
    }
    await sleep(50);
  }

  return {
    url,
    pid: child.pid ?? -1,
    exited,
    output: () => output,
    kill,
    async stop(graceMs = 12_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      const exit = await exited;
      clearTimeout(timer);
      return exit;
    },
  };
}

/** Starts a server process and resolves once it is ready (GET /healthz answers 200, or it logged so). */
export async function startServerProcess(options: ServerProcessOptions): Promise<ServerProcess> {
  if (options.port !== undefined) return startOnce(options, options.port);
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
