#!/usr/bin/env node
// `npm run e2e`: the package against a real n8n (the 1.123 line, the last that runs on Node 20) and a real
// callgate (its simulator). Not part of `npm test`: the first run installs n8n (~6 minutes, ~1.8 GB) into a
// cache folder outside the repository, which later runs reuse.
//
// 1. n8n 1.123.81 installed in the cache: n8n-nodes-base pins an xlsx tarball on cdn.sheetjs.com (unreachable
//    from machines that reach only the npm registry), so `"overrides": {"xlsx": "0.18.5"}`; isolated-vm 6 does
//    not build on Node 20, so `npm install --ignore-scripts`, then `npm rebuild sqlite3` (n8n's database)
//    alone, and n8n runs with N8N_EXPRESSION_ENGINE=legacy.
// 2. This package built, packed with `npm pack` and unpacked into `<N8N_USER_FOLDER>/.n8n/nodes/node_modules`
//    where n8n loads community packages from: its `files` and `n8n` section are tested too.
// 3. callgate built and started on a free port with an empty SQLite database; the demo test key it prints.
// 4. The credential and the two workflows of e2e/ imported with n8n's CLI.
// 5. Manual Trigger → Callgate (Call → Create) → Callgate again with the same Idempotency Key, run twice with
//    `n8n execute` (and a third time beside the running n8n, in 6): one call, seen through callgate's API.
// 6. `n8n start`; the Callgate Trigger workflow activated through n8n's REST API makes a webhook endpoint in
//    callgate; two forged deliveries get 401; a call placed through callgate's API ends in exactly one
//    successful execution holding its `call.completed` event; deactivation deletes the endpoint.
// 7. A report, PASS or FAIL per step; exit code 0 only if every step passed. Both servers are stopped and the
//    temporary folders removed in any case (`--keep` keeps them, for a look at the logs).
//
// Settings (environment): CALLGATE_N8N_E2E_CACHE (the cache folder, default <tmpdir>/callgate-n8n-e2e).
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const N8N_VERSION = '1.123.81';
const packageDir = fileURLToPath(new URL('..', import.meta.url));
const repoRoot = path.resolve(packageDir, '..', '..');
const fixtures = path.join(packageDir, 'e2e');
const cacheRoot = process.env.CALLGATE_N8N_E2E_CACHE || path.join(os.tmpdir(), 'callgate-n8n-e2e');
const n8nDir = path.join(cacheRoot, `n8n-${N8N_VERSION}`);
const n8nBin = path.join(n8nDir, 'node_modules', 'n8n', 'bin', 'n8n');
const installMarker = path.join(n8nDir, '.install-complete');
const keep = process.argv.includes('--keep');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

const AGENT_ID = 'agent_demo_simulator';
const SECOND = 1000;
const MINUTE = 60 * SECOND;

// ---------------------------------------------------------------------------------------------------------
// Small tools

const startedAt = Date.now();
const elapsed = () => `${((Date.now() - startedAt) / SECOND).toFixed(1)}s`;
const say = (line) => process.stdout.write(`[e2e ${elapsed()}] ${line}\n`);

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const randomDigits = (count) => Array.from({ length: count }, () => crypto.randomInt(10)).join('');
const randomId = (length) => crypto.randomBytes(length).toString('base64url').replace(/[-_]/g, 'x').slice(0, length);
const tail = (text, lines = 40) => text.split('\n').slice(-lines).join('\n');
const indent = (text) =>
  text
    .split('\n')
    .map((line) => `      | ${line}`)
    .join('\n');

/** This process's environment without what an outer `npm run` put in it: its `npm_config_*` (this package's
 * .npmrc, such as ignore-scripts, and its local prefix) would steer every npm started here. */
function baseEnv() {
  const env = { ...process.env };
  for (const name of Object.keys(env)) if (/^npm_/i.test(name) || name === 'INIT_CWD') delete env[name];
  return env;
}

/** The commands running now (stopped on Ctrl-C: each runs in a process group of its own). */
const commands = new Set();

/** Runs a command to its end; resolves with its exit code and output (never rejects on a non-zero exit). */
function run(command, args, { cwd, env, timeoutMs = 10 * MINUTE, echo = false } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: env ?? baseEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    commands.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      if (echo) process.stdout.write(chunk);
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (echo) process.stderr.write(chunk);
    });
    const timer = setTimeout(() => {
      killGroup(child, 'SIGKILL');
      reject(new Error(`${path.basename(command)} ${args.join(' ')} took longer than ${timeoutMs / SECOND} s\n${tail(stdout + stderr)}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      commands.delete(child);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr, output: stdout + stderr });
    });
  });
}

/** Runs a command that must succeed; its output's end is in the error otherwise. */
async function runOk(command, args, options) {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(`${path.basename(command)} ${args.join(' ')} exited with ${result.code}:\n${indent(tail(result.output))}`);
  }
  return result;
}

/** Signals the process group of a child started with `detached: true` (the child and what it started). */
function killGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is empty: all gone already
  }
}

/** A server started in its own process group, its output in a log file and in memory. */
function startServer(name, command, args, { cwd, env, logFile }) {
  const log = fs.createWriteStream(logFile);
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const server = { name, child, logFile, output: '', exited: null };
  const take = (chunk) => {
    server.output += chunk;
    log.write(chunk);
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  server.done = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      server.exited = { code, signal };
      log.end();
      resolve(server.exited);
    });
    child.on('error', (error) => {
      server.exited = { code: null, signal: null, error };
      log.end();
      resolve(server.exited);
    });
  });
  return server;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with how it ended. */
async function stopServer(server, graceMs = 45 * SECOND) {
  if (!server) return undefined;
  if (server.exited) {
    killGroup(server.child, 'SIGKILL');
    return server.exited;
  }
  killGroup(server.child, 'SIGTERM');
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve('late'), graceMs);
  });
  const ended = await Promise.race([server.done, late]);
  clearTimeout(timer);
  if (ended === 'late') {
    killGroup(server.child, 'SIGKILL');
    await server.done;
    return { ...server.exited, killed: true };
  }
  // Its children (n8n's task runner) go with the group.
  killGroup(server.child, 'SIGKILL');
  return ended;
}

/** Polls `probe` until it returns something other than undefined/false; the deadline is an error. */
async function waitFor(what, probe, { timeoutMs = 30 * SECOND, intervalMs = 250, server } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  for (;;) {
    if (server?.exited) {
      throw new Error(
        `${server.name} exited (${JSON.stringify(server.exited)}) while waiting for ${what}:\n${indent(tail(server.output))}`,
      );
    }
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs / SECOND} s waiting for ${what}${lastError ? ` (last error: ${lastError.message})` : ''}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** fetch with a JSON body and answer; never throws on a status. */
async function http(method, url, { headers = {}, body, raw } = {}) {
  const init = { method, headers: { ...headers }, signal: AbortSignal.timeout(30 * SECOND) };
  if (raw !== undefined) init.body = raw;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['content-type'] = 'application/json';
  }
  const response = await fetch(url, init);
  const text = await response.text();
  let json;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

function expect(condition, message) {
  if (!condition) throw new Error(message);
}

/** A fixture of e2e/ with its `@@NAME@@` placeholders filled (each inside a JSON string). */
function fixture(name, values) {
  const text = fs.readFileSync(path.join(fixtures, name), 'utf8').replace(/@@([A-Z_]+)@@/g, (_, key) => {
    if (!(key in values)) throw new Error(`fixture ${name}: no value for @@${key}@@`);
    return JSON.stringify(String(values[key])).slice(1, -1);
  });
  return JSON.parse(text);
}

/** n8n keeps execution data in the `flatted` format: an array whose first element is the root, strings in
 * objects being indexes into it. */
function unflatten(text) {
  const input = JSON.parse(text);
  if (!Array.isArray(input)) return input;
  const seen = new Set();
  const revive = (object) => {
    for (const key of Object.keys(object)) {
      const value = object[key];
      if (typeof value !== 'string') continue;
      const target = input[Number(value)];
      object[key] = target;
      if (target && typeof target === 'object' && !seen.has(target)) {
        seen.add(target);
        revive(target);
      }
    }
    return object;
  };
  const root = input[0];
  if (root && typeof root === 'object') {
    seen.add(root);
    revive(root);
  }
  return root;
}

/** The JSON of `n8n execute`'s answer: printed after "Execution was successful:" and a line of `=`. */
function executeResult(output) {
  const marker = output.indexOf('Execution was successful:');
  expect(marker !== -1, `n8n execute did not say "Execution was successful":\n${indent(tail(output))}`);
  const start = output.indexOf('\n{', marker);
  const end = output.indexOf('\n}', start);
  expect(start !== -1 && end !== -1, `no JSON after "Execution was successful":\n${indent(tail(output))}`);
  return JSON.parse(output.slice(start + 1, end + 2));
}

/** The JSON of the first item a node output in an execution's run data. */
function firstItem(runData, nodeName) {
  const json = runData?.[nodeName]?.[0]?.data?.main?.[0]?.[0]?.json;
  expect(json !== undefined, `node "${nodeName}" output no item (run data of: ${Object.keys(runData ?? {}).join(', ') || 'no node'})`);
  return json;
}

/** Standard Webhooks headers signing `body` with `secret` (whsec_<base64>), as callgate signs. */
function signedHeaders(body, secret, id = `evt_${randomId(26).toLowerCase()}`) {
  const timestamp = String(Math.floor(Date.now() / SECOND));
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

// ---------------------------------------------------------------------------------------------------------
// The steps

const steps = [];
const ctx = { servers: [], tmp: undefined };

async function step(title, body) {
  const entry = { title, status: 'RUN', details: [], ms: 0 };
  steps.push(entry);
  say(`${title} ...`);
  const began = Date.now();
  try {
    await body((line) => {
      entry.details.push(line);
      say(`  ${line}`);
    });
    entry.status = 'PASS';
  } catch (error) {
    entry.status = 'FAIL';
    entry.error = error instanceof Error ? error.message : String(error);
  }
  entry.ms = Date.now() - began;
  say(`${entry.status} ${title} (${(entry.ms / SECOND).toFixed(1)} s)`);
  if (entry.status === 'FAIL') {
    process.stdout.write(`${indent(entry.error)}\n`);
    throw new StepFailed(title);
  }
}

class StepFailed extends Error {}

const PLANNED = [
  '1. n8n installed (cache)',
  '2. Node package built, packed and unpacked into n8n',
  '3. callgate started',
  '4. Credential and workflows imported',
  '5. Action workflow: call placed once (n8n execute, twice)',
  '6. n8n started (and n8n execute beside it)',
  '7. Trigger activated: endpoint created in callgate',
  '8. Forged deliveries refused (401)',
  '9. call.completed delivered: one successful execution',
  '10. Trigger deactivated: endpoint deleted',
  '11. Servers stopped',
];

async function installN8n(note) {
  if (fs.existsSync(installMarker) && fs.existsSync(n8nBin)) {
    note(`cached: ${n8nDir}`);
    return;
  }
  note(`installing n8n ${N8N_VERSION} into ${n8nDir} (the first time takes ~6 minutes and ~1.8 GB)`);
  fs.mkdirSync(cacheRoot, { recursive: true });
  const partial = `${n8nDir}.partial-${process.pid}`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  fs.writeFileSync(
    path.join(partial, 'package.json'),
    `${JSON.stringify(
      {
        name: 'callgate-n8n-e2e-runtime',
        private: true,
        description: `n8n ${N8N_VERSION} for clients/n8n's npm run e2e`,
        dependencies: { n8n: N8N_VERSION },
        // n8n-nodes-base pins an xlsx tarball on cdn.sheetjs.com, unreachable here; the registry's instead.
        overrides: { xlsx: '0.18.5' },
      },
      null,
      2,
    )}\n`,
  );
  try {
    // isolated-vm 6 (an n8n dependency) needs Node 22 to build: no install scripts, then sqlite3 alone.
    await runOk(npm, ['install', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: partial, timeoutMs: 40 * MINUTE });
    await runOk(npm, ['rebuild', 'sqlite3', '--ignore-scripts=false'], { cwd: partial, timeoutMs: 15 * MINUTE });
    await runOk(process.execPath, ['-e', "require('sqlite3')"], { cwd: partial });
    fs.writeFileSync(path.join(partial, '.install-complete'), `n8n ${N8N_VERSION} ${new Date().toISOString()}\n`);
    fs.rmSync(n8nDir, { recursive: true, force: true });
    fs.renameSync(partial, n8nDir);
  } finally {
    fs.rmSync(partial, { recursive: true, force: true });
  }
  note('installed');
}

async function packNode(note) {
  await runOk(npm, ['run', 'build'], { cwd: packageDir, timeoutMs: 5 * MINUTE });
  const packDir = path.join(ctx.tmp, 'pack');
  fs.mkdirSync(packDir);
  const packed = await runOk(npm, ['pack', '--json', '--pack-destination', packDir], { cwd: packageDir });
  const info = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('[')))[0];
  const tarball = path.join(packDir, info.filename);
  note(`packed ${info.filename}: ${info.entryCount} files, ${info.size} bytes`);

  const nodesDir = path.join(ctx.userFolder, '.n8n', 'nodes');
  const target = path.join(nodesDir, 'node_modules', 'n8n-nodes-callgate');
  fs.mkdirSync(target, { recursive: true });
  await runOk('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
  // As n8n's own installation of a community package leaves it.
  fs.writeFileSync(
    path.join(nodesDir, 'package.json'),
    `${JSON.stringify({ name: 'installed-nodes', private: true, dependencies: { 'n8n-nodes-callgate': info.version } }, null, 2)}\n`,
  );

  const manifest = JSON.parse(fs.readFileSync(path.join(target, 'package.json'), 'utf8'));
  expect(manifest.name === 'n8n-nodes-callgate', `the package is named ${manifest.name}`);
  expect(Object.keys(manifest.dependencies ?? {}).length === 0, `runtime dependencies: ${JSON.stringify(manifest.dependencies)}`);
  const declared = [...(manifest.n8n?.credentials ?? []), ...(manifest.n8n?.nodes ?? [])];
  expect(declared.length >= 3, `the n8n section lists ${declared.length} files`);
  const missing = declared.filter((file) => !fs.existsSync(path.join(target, file)));
  expect(missing.length === 0, `files the n8n section lists are not in the tarball: ${missing.join(', ')}`);
  note(`unpacked into ${path.relative(ctx.tmp, target)}; n8n section: ${declared.length} files, all present`);
}

async function startCallgate(note) {
  await runOk(npm, ['run', 'build'], { cwd: repoRoot, timeoutMs: 5 * MINUTE });
  const port = await freePort();
  const dataDir = path.join(ctx.tmp, 'callgate-data');
  const env = baseEnv();
  for (const name of Object.keys(env))
    if (name.startsWith('CALLGATE_') || name === 'DATABASE_URL' || name === 'REDIS_URL') delete env[name];
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    CALLGATE_DATA_DIR: dataDir,
    CALLGATE_WEBHOOK_ALLOW_PRIVATE: 'true',
    CALLGATE_SIMULATOR_DELAY_MS: '1000',
    CALLGATE_RATE_LIMIT_PER_MINUTE: '1000',
    CALLGATE_LOG_LEVEL: 'warn',
  });
  const server = startServer('callgate', process.execPath, [path.join(repoRoot, 'dist', 'server.js')], {
    cwd: repoRoot,
    env,
    logFile: path.join(ctx.tmp, 'callgate.log'),
  });
  ctx.servers.push(server);
  ctx.callgate = server;
  ctx.callgateUrl = `http://127.0.0.1:${port}`;
  ctx.apiKey = await waitFor("the demo test key in callgate's output", () => server.output.match(/test key: (cg_test_[0-9a-f]+)/)?.[1], {
    server,
  });
  await waitFor('callgate /healthz', async () => (await http('GET', `${ctx.callgateUrl}/healthz`)).status === 200, { server });
  const agents = await callgate('GET', '/v1/agents');
  expect(agents.status === 200, `GET /v1/agents: ${agents.status} ${agents.text}`);
  expect(
    agents.json.data.some((agent) => agent.id === AGENT_ID),
    `no ${AGENT_ID} among ${agents.json.data.map((a) => a.id).join(', ')}`,
  );
  note(`${ctx.callgateUrl} (pid ${server.child.pid}), test key ${ctx.apiKey.slice(0, 12)}…, agent ${AGENT_ID}`);
}

function callgate(method, pathname, options = {}) {
  return http(method, `${ctx.callgateUrl}${pathname}`, {
    ...options,
    headers: { authorization: `Bearer ${ctx.apiKey}`, ...(options.headers ?? {}) },
  });
}

function n8nEnv(extra = {}) {
  const env = baseEnv();
  for (const name of Object.keys(env)) if (name.startsWith('N8N_') || name.startsWith('DB_') || name === 'WEBHOOK_URL') delete env[name];
  return {
    ...env,
    N8N_USER_FOLDER: ctx.userFolder,
    N8N_LISTEN_ADDRESS: '127.0.0.1',
    N8N_HOST: '127.0.0.1',
    N8N_PORT: String(ctx.n8nPort),
    N8N_PROTOCOL: 'http',
    WEBHOOK_URL: `http://127.0.0.1:${ctx.n8nPort}/`,
    N8N_EDITOR_BASE_URL: `http://127.0.0.1:${ctx.n8nPort}/`,
    N8N_SECURE_COOKIE: 'false',
    N8N_DIAGNOSTICS_ENABLED: 'false',
    N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
    N8N_TEMPLATES_ENABLED: 'false',
    N8N_PERSONALIZATION_ENABLED: 'false',
    N8N_HIRING_BANNER_ENABLED: 'false',
    // 1.123 defaults to the isolated-vm engine, whose module is not built here (Node 20): the legacy one.
    N8N_EXPRESSION_ENGINE: 'legacy',
    N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'true',
    N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
    DB_TYPE: 'sqlite',
    N8N_LOG_LEVEL: 'info',
    ...extra,
  };
}

/** An n8n CLI command (each boots n8n: some seconds); the task runner's broker on a port of its own. */
async function n8nCli(args, options = {}) {
  const env = n8nEnv({ N8N_RUNNERS_BROKER_PORT: String(await freePort()) });
  return runOk(process.execPath, [n8nBin, ...args], { cwd: ctx.tmp, env, timeoutMs: 5 * MINUTE, ...options });
}

async function importFixtures(note) {
  ctx.credentialId = `cg${randomId(14)}`;
  ctx.actionWorkflowId = `cgA${randomId(13)}`;
  ctx.triggerWorkflowId = `cgT${randomId(13)}`;
  ctx.webhookId = crypto.randomUUID();
  ctx.to = `+1555${randomDigits(7)}`;
  ctx.idempotencyKey = `n8n-e2e-${crypto.randomUUID()}`;
  const values = {
    CREDENTIAL_ID: ctx.credentialId,
    CALLGATE_URL: ctx.callgateUrl,
    API_KEY: ctx.apiKey,
    ACTION_WORKFLOW_ID: ctx.actionWorkflowId,
    TRIGGER_WORKFLOW_ID: ctx.triggerWorkflowId,
    WEBHOOK_ID: ctx.webhookId,
    TO: ctx.to,
    IDEMPOTENCY_KEY: ctx.idempotencyKey,
  };
  const credentialsFile = path.join(ctx.tmp, 'credentials.json');
  fs.writeFileSync(credentialsFile, JSON.stringify(fixture('credentials.json', values)), { mode: 0o600 });
  const workflowsFile = path.join(ctx.tmp, 'workflows.json');
  fs.writeFileSync(workflowsFile, JSON.stringify([fixture('action-workflow.json', values), fixture('trigger-workflow.json', values)]));

  // Plain `data` is encrypted by the import with this user folder's key.
  const credentials = await n8nCli(['import:credentials', `--input=${credentialsFile}`]);
  expect(/Successfully imported 1 credential/.test(credentials.output), `import:credentials:\n${indent(tail(credentials.output))}`);
  fs.rmSync(credentialsFile);
  const workflows = await n8nCli(['import:workflow', `--input=${workflowsFile}`]);
  expect(/Successfully imported 2 workflows/.test(workflows.output), `import:workflow:\n${indent(tail(workflows.output))}`);
  note(`credential ${ctx.credentialId} (callgateApi), workflows ${ctx.actionWorkflowId} (action), ${ctx.triggerWorkflowId} (trigger)`);
}

/** `n8n execute` of the action workflow: the call id both Callgate nodes output. */
async function executeAction(note, label) {
  const began = Date.now();
  const result = await n8nCli(['execute', `--id=${ctx.actionWorkflowId}`]);
  const run = executeResult(result.output);
  expect(run.status === undefined || run.status === 'success', `execution status ${run.status}`);
  const runData = run.data?.resultData?.runData;
  const first = firstItem(runData, 'Place call');
  const again = firstItem(runData, 'Place call again');
  expect(/^call_/.test(String(first.id)), `"Place call" output no call id: ${JSON.stringify(first)}`);
  expect(again.id === first.id, `"Place call again" (same Idempotency Key) gave ${again.id}, not ${first.id}`);
  expect(first.to === ctx.to && first.agent_id === AGENT_ID, `the call is not the one asked for: ${JSON.stringify(first)}`);
  note(`n8n execute ${label}: ${first.id} from both nodes (${((Date.now() - began) / SECOND).toFixed(1)} s)`);
  return first.id;
}

async function actionWorkflow(note) {
  const ids = [await executeAction(note, '#1'), await executeAction(note, '#2')];
  expect(ids[0] === ids[1], `the second execution placed another call: ${ids[1]} (first ${ids[0]})`);
  ctx.actionCallId = ids[0];

  const call = await callgate('GET', `/v1/calls/${ctx.actionCallId}`);
  expect(call.status === 200, `GET /v1/calls/${ctx.actionCallId}: ${call.status} ${call.text}`);
  expect(call.json.to === ctx.to && call.json.agent_id === AGENT_ID, `callgate has another call: ${call.text}`);
  expect(
    call.json.metadata?.customer_name === 'Ada' && call.json.metadata?.source === 'n8n-e2e',
    `metadata not passed: ${JSON.stringify(call.json.metadata)}`,
  );
  const list = await callgate('GET', `/v1/calls?to=${encodeURIComponent(ctx.to)}`);
  expect(list.status === 200, `GET /v1/calls?to=…: ${list.status} ${list.text}`);
  expect(
    list.json.data.length === 1,
    `callgate has ${list.json.data.length} calls to ${ctx.to}: ${list.json.data.map((c) => c.id).join(', ')}`,
  );
  note(`GET /v1/calls/${ctx.actionCallId}: 200, status ${call.json.status}, metadata ${JSON.stringify(call.json.metadata)}`);
  note(`GET /v1/calls?to=${ctx.to}: exactly 1 call (4 creates with one Idempotency Key across 2 executions)`);
}

/** n8n's internal REST API, as its editor uses it: the auth cookie of the owner, and the browser id it is bound to. */
function n8nRest(method, pathname, body) {
  return http(method, `${ctx.n8nUrl}/rest${pathname}`, {
    headers: { cookie: ctx.n8nCookie ?? '', 'browser-id': ctx.browserId },
    body,
  });
}

async function startN8n(note) {
  const env = n8nEnv({ N8N_RUNNERS_BROKER_PORT: String(await freePort()) });
  const server = startServer('n8n', process.execPath, [n8nBin, 'start'], { cwd: ctx.tmp, env, logFile: path.join(ctx.tmp, 'n8n.log') });
  ctx.servers.push(server);
  ctx.n8n = server;
  const began = Date.now();
  // /healthz/readiness answers once the database is ready, before the REST API is: wait for the API.
  await waitFor('n8n /rest/settings', async () => (await http('GET', `${ctx.n8nUrl}/rest/settings`)).status === 200, {
    timeoutMs: 3 * MINUTE,
    intervalMs: 500,
    server,
  });
  note(`n8n ${N8N_VERSION} ready at ${ctx.n8nUrl} (pid ${server.child.pid}) after ${((Date.now() - began) / SECOND).toFixed(1)} s`);

  ctx.browserId = crypto.randomUUID();
  const password = `E2e-${randomId(12)}9`;
  const setup = await n8nRest('POST', '/owner/setup', { email: 'e2e@example.com', firstName: 'E2E', lastName: 'Check', password });
  expect(setup.status === 200, `POST /rest/owner/setup: ${setup.status} ${setup.text}`);
  const cookie = setup.headers.getSetCookie().find((line) => line.startsWith('n8n-auth='));
  expect(cookie, 'no n8n-auth cookie from the owner set-up');
  ctx.n8nCookie = cookie.split(';')[0];
  const me = await n8nRest('GET', '/login');
  expect(me.status === 200 && me.json?.data?.email, `GET /rest/login: ${me.status} ${me.text}`);
  note(`owner ${me.json.data.email} set up; REST API signed in`);

  // The CLI beside a running n8n (the same database; its task broker on a port of its own).
  const id = await executeAction(note, '#3, while n8n runs');
  expect(id === ctx.actionCallId, `the third execution placed another call: ${id} (first ${ctx.actionCallId})`);
  const list = await callgate('GET', `/v1/calls?to=${encodeURIComponent(ctx.to)}`);
  expect(list.status === 200 && list.json.data.length === 1, `callgate has ${list.json.data?.length} calls to ${ctx.to}`);
}

async function activateTrigger(note) {
  const workflow = await n8nRest('GET', `/workflows/${ctx.triggerWorkflowId}`);
  expect(workflow.status === 200, `GET /rest/workflows/${ctx.triggerWorkflowId}: ${workflow.status} ${workflow.text}`);
  const { versionId } = workflow.json.data;
  const activated = await n8nRest('POST', `/workflows/${ctx.triggerWorkflowId}/activate`, { versionId });
  expect(activated.status === 200, `POST /rest/workflows/${ctx.triggerWorkflowId}/activate: ${activated.status} ${activated.text}`);
  expect(activated.json.data.active === true, `the workflow is not active: ${activated.text.slice(0, 500)}`);
  note(`workflow ${ctx.triggerWorkflowId} active (version ${versionId})`);

  ctx.webhookUrl = `${ctx.n8nUrl}/webhook/${ctx.webhookId}/webhook`;
  const listed = await callgate('GET', `/v1/webhook_endpoints?url=${encodeURIComponent(ctx.webhookUrl)}`);
  expect(listed.status === 200, `GET /v1/webhook_endpoints?url=…: ${listed.status} ${listed.text}`);
  const all = await callgate('GET', '/v1/webhook_endpoints');
  expect(
    listed.json.data.length === 1,
    `${listed.json.data.length} endpoints for ${ctx.webhookUrl}; all endpoints: ${all.json.data.map((e) => e.url).join(', ') || 'none'}`,
  );
  const endpoint = listed.json.data[0];
  expect(endpoint.status === 'enabled', `endpoint ${endpoint.id} is ${endpoint.status}`);
  expect(JSON.stringify(endpoint.enabled_events) === '["call.completed"]', `enabled_events ${JSON.stringify(endpoint.enabled_events)}`);
  expect(endpoint.livemode === false, 'the endpoint is live, not test');
  ctx.endpointId = endpoint.id;
  note(`callgate endpoint ${endpoint.id}: ${endpoint.url}, events ${JSON.stringify(endpoint.enabled_events)}, "${endpoint.description}"`);
}

function fakeEvent(callId) {
  return JSON.stringify({
    id: `evt_${randomId(26).toLowerCase()}`,
    type: 'call.completed',
    created_at: new Date().toISOString(),
    livemode: false,
    data: { id: callId, agent_id: AGENT_ID, status: 'completed', to: '+15550000000', metadata: {} },
  });
}

async function forgedDeliveries(note) {
  const forgedId = `call_forged_${randomId(10).toLowerCase()}`;
  ctx.forgedCallId = forgedId;
  const body = fakeEvent(forgedId);
  const wrongSecret = `whsec_${crypto.randomBytes(24).toString('base64')}`;
  const forged = await http('POST', ctx.webhookUrl, { headers: signedHeaders(body, wrongSecret), raw: body });
  expect(forged.status === 401, `a delivery signed with another secret got ${forged.status}: ${forged.text}`);
  note(`signed with another secret: ${forged.status} ${forged.text.slice(0, 120)}`);
  const unsigned = await http('POST', ctx.webhookUrl, { headers: { 'content-type': 'application/json' }, raw: body });
  expect(unsigned.status === 401, `an unsigned delivery got ${unsigned.status}: ${unsigned.text}`);
  note(`unsigned: ${unsigned.status} ${unsigned.text.slice(0, 120)}`);
  // That they started nothing is checked in the next step: the workflow's only execution is the real one.
}

async function listExecutions() {
  const filter = encodeURIComponent(JSON.stringify({ workflowId: ctx.triggerWorkflowId }));
  const answer = await n8nRest('GET', `/executions?filter=${filter}&limit=20`);
  expect(answer.status === 200, `GET /rest/executions: ${answer.status} ${answer.text}`);
  return answer.json.data.results;
}

async function deliveredEvent(note) {
  const created = await callgate('POST', '/v1/calls', {
    headers: { 'idempotency-key': `n8n-e2e-trigger-${crypto.randomUUID()}` },
    body: { agent_id: AGENT_ID, to: `+1555${randomDigits(7)}`, metadata: { source: 'n8n-e2e-trigger' } },
  });
  expect(created.status === 201, `POST /v1/calls: ${created.status} ${created.text}`);
  const callId = created.json.id;
  const placed = Date.now();
  note(`POST /v1/calls: ${callId} (${created.json.to})`);

  const execution = await waitFor(
    `an execution of workflow ${ctx.triggerWorkflowId} that ended`,
    async () => (await listExecutions()).find((e) => e.finished || ['success', 'error', 'crashed', 'canceled'].includes(e.status)),
    { timeoutMs: 60 * SECOND, intervalMs: 500, server: ctx.n8n },
  );
  const waited = Date.now() - placed;
  const detail = await n8nRest('GET', `/executions/${execution.id}`);
  expect(detail.status === 200, `GET /rest/executions/${execution.id}: ${detail.status} ${detail.text}`);
  const data = typeof detail.json.data.data === 'string' ? unflatten(detail.json.data.data) : detail.json.data.data;
  expect(
    execution.status === 'success',
    `execution ${execution.id} ended ${execution.status}: ${JSON.stringify(data?.resultData?.error ?? {})}`,
  );
  const event = firstItem(data.resultData.runData, 'Callgate Trigger');
  firstItem(data.resultData.runData, 'Received');
  expect(event.type === 'call.completed', `the trigger output ${event.type}, not call.completed`);
  expect(event.data?.id === callId, `the event is of call ${event.data?.id}, not ${callId}`);
  expect(event.data?.status === 'completed' && event.livemode === false, `event data: ${JSON.stringify(event)}`);
  note(
    `execution ${execution.id} (mode ${execution.mode}) success ${(waited / SECOND).toFixed(1)} s after the call was placed: ${event.type} ${event.id} of ${event.data.id}`,
  );

  const executions = await listExecutions();
  expect(
    executions.length === 1,
    `the workflow has ${executions.length} executions (the forged deliveries must start none): ${executions.map((e) => `${e.id} ${e.status}`).join(', ')}`,
  );
  note("it is the workflow's only execution: the forged deliveries started none");
}

async function deactivateTrigger(note) {
  const answer = await n8nRest('POST', `/workflows/${ctx.triggerWorkflowId}/deactivate`);
  expect(answer.status === 200, `POST /rest/workflows/${ctx.triggerWorkflowId}/deactivate: ${answer.status} ${answer.text}`);
  expect(answer.json.data.active === false, 'the workflow is still active');
  note(`workflow ${ctx.triggerWorkflowId} inactive`);
  await waitFor(
    `GET /v1/webhook_endpoints/${ctx.endpointId} to answer 404`,
    async () => (await callgate('GET', `/v1/webhook_endpoints/${ctx.endpointId}`)).status === 404,
    {
      timeoutMs: 15 * SECOND,
    },
  );
  const left = await callgate('GET', '/v1/webhook_endpoints');
  expect(left.status === 200 && left.json.data.length === 0, `endpoints left in callgate: ${left.text}`);
  note(`endpoint ${ctx.endpointId} deleted (GET answers 404); the key has no endpoint left`);
}

async function stopAll(note) {
  for (const child of commands) killGroup(child, 'SIGKILL');
  const ends = [];
  for (const server of [...ctx.servers].reverse()) {
    const began = Date.now();
    const ended = await stopServer(server);
    ends.push({ name: server.name, ended });
    if (note) note(`${server.name} stopped (${JSON.stringify(ended)}) in ${((Date.now() - began) / SECOND).toFixed(1)} s`);
  }
  return ends;
}

// ---------------------------------------------------------------------------------------------------------

function report() {
  const line = '='.repeat(100);
  const out = [line, `callgate n8n end-to-end check: n8n ${N8N_VERSION}, Node ${process.version}`, line];
  for (const title of PLANNED) {
    const entry = steps.find((candidate) => candidate.title === title);
    if (!entry) {
      out.push(`SKIP  ${title}`);
      continue;
    }
    out.push(`${entry.status.padEnd(5)} ${entry.title} (${(entry.ms / SECOND).toFixed(1)} s)`);
    for (const detail of entry.details) out.push(`        ${detail}`);
    if (entry.error) out.push(indent(entry.error));
  }
  const passed = steps.filter((entry) => entry.status === 'PASS').length;
  const ok = passed === PLANNED.length;
  out.push(line, `${ok ? 'PASS' : 'FAIL'}: ${passed} of ${PLANNED.length} steps passed in ${elapsed()}`, line);
  process.stdout.write(`\n${out.join('\n')}\n`);
  return ok;
}

async function main() {
  ctx.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-n8n-e2e-run-'));
  ctx.userFolder = path.join(ctx.tmp, 'n8n-user');
  fs.mkdirSync(ctx.userFolder);
  ctx.n8nPort = await freePort();
  ctx.n8nUrl = `http://127.0.0.1:${ctx.n8nPort}`;
  say(`temporary folder ${ctx.tmp}`);
  let interrupted = false;
  const onSignal = (signal) => {
    if (interrupted) return;
    interrupted = true;
    say(`${signal}: stopping the servers`);
    stopAll().finally(() => {
      if (!keep) fs.rmSync(ctx.tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    await step(PLANNED[0], installN8n);
    await step(PLANNED[1], packNode);
    await step(PLANNED[2], startCallgate);
    await step(PLANNED[3], importFixtures);
    await step(PLANNED[4], actionWorkflow);
    await step(PLANNED[5], startN8n);
    await step(PLANNED[6], activateTrigger);
    await step(PLANNED[7], forgedDeliveries);
    await step(PLANNED[8], deliveredEvent);
    await step(PLANNED[9], deactivateTrigger);
  } catch (error) {
    if (!(error instanceof StepFailed)) throw error;
    for (const server of ctx.servers) {
      process.stdout.write(`\n--- end of ${server.name}'s output (${server.logFile}) ---\n${tail(server.output, 60)}\n`);
    }
  }
  await step(PLANNED[10], async (note) => {
    const ends = await stopAll(note);
    const killed = ends.filter((end) => end.ended?.killed).map((end) => end.name);
    expect(killed.length === 0, `had to be killed: ${killed.join(', ')}`);
  }).catch(() => {});
  const ok = report();
  if (keep) say(`kept ${ctx.tmp}`);
  else fs.rmSync(ctx.tmp, { recursive: true, force: true });
  process.exit(ok ? 0 : 1);
}

main().catch(async (error) => {
  process.stderr.write(`e2e: ${error.stack ?? error}\n`);
  await stopAll().catch(() => {});
  if (ctx.tmp && !keep) fs.rmSync(ctx.tmp, { recursive: true, force: true });
  process.exit(1);
});
