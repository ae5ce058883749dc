/**
 * The Python client (clients/python) through its own unittest suite, run by python3 as a child process:
 * the offline tests once (retry rules against a fake server, webhook verification by hand), and the tests
 * against the real callgate on SQLite and PostgreSQL (tests/test_server_*.py), with the app started here
 * on a real port, its worker running (so simulated calls end and webhooks are delivered), and accounts of
 * their own seeded for each Python test. python3 must be on PATH: without it this test fails, saying so.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { after, before, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort } from '../../../test/support/http-client.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const python = process.env.CALLGATE_TEST_PYTHON ?? 'python3';
/** Accounts handed to the Python tests, one per test that needs its own (support.take_account). */
const accountsPerMode = { test: 15, live: 2 } as const;

/** Why the Python tests cannot run here, or null. */
function pythonProblem(): string | null {
  const probe = spawnSync(python, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], { encoding: 'utf8' });
  if (probe.error) return `${python} could not be run (${probe.error.message}): install Python 3.9 or newer, or set CALLGATE_TEST_PYTHON`;
  const version = probe.stdout.trim();
  const [major, minor] = version.split('.').map(Number);
  if (probe.status !== 0 || major !== 3 || (minor ?? 0) < 9) return `${python} is ${version || 'broken'}; the client needs 3.9 or newer`;
  return null;
}

/** Runs `python3 -m unittest` on the files matching `pattern`, asynchronously: the in-process app keeps serving. */
async function unittest(pattern: string, env: Record<string, string> = {}): Promise<void> {
  const problem = pythonProblem();
  assert.equal(problem, null, `The Python client's tests need python3: ${problem}`);
  const child = spawn(python, ['-m', 'unittest', 'discover', '-v', '-s', 'tests', '-p', pattern], {
    cwd: packageDir,
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (exitCode) => resolve(exitCode));
  });
  assert.equal(code, 0, `python3 -m unittest (${pattern}) failed:\n${output}`);
  assert.match(output, /^Ran [1-9]\d* tests? in /m, `no test ran:\n${output}`);
  assert.doesNotMatch(output, /skipped=/, `tests were skipped:\n${output}`);
}

it('Python client: offline tests (retry rules against a fake server, webhook verification)', { timeout: 60_000 }, async () => {
  await unittest('test_offline*.py');
});

await forEachDialect('Python client against the real server', (dialect) => {
  let t: TestApp;
  let baseUrl: string;

  before(async () => {
    // Simulated calls last a second: long enough to read a call still initiated, short for the tests that wait.
    t = await startTestApp(dialect, { startWorker: true, env: { CALLGATE_SIMULATOR_DELAY_MS: '1000' } });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('passes tests/test_server_*.py', { timeout: 120_000 }, async () => {
    const accounts = [];
    for (const [mode, count] of Object.entries(accountsPerMode) as [keyof typeof accountsPerMode, number][]) {
      for (let n = 1; n <= count; n++) {
        const account = await t.newAccount({ mode, agentId: `agent_py_${mode}_${n}` });
        accounts.push({ key: account.token, agent_id: account.agentId, mode });
      }
    }
    await unittest('test_server*.py', { CALLGATE_TEST_BASE_URL: baseUrl, CALLGATE_TEST_ACCOUNTS: JSON.stringify(accounts) });
  });
});
