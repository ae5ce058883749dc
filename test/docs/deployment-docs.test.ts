/**
 * The operator's documents against the code: every setting src/config.ts reads and every CLI command is
 * in the README, the deployment guide is linked from it, and the systemd unit it gives passes
 * `systemd-analyze verify` where systemd is installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { runCli } from '../support/cli-runner.js';
import { repoRoot } from '../support/repo-root.js';

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const deployment = fs.readFileSync(path.join(repoRoot, 'docs/deployment.md'), 'utf8');

it('the README documents every setting that src/config.ts reads', () => {
  const source = fs.readFileSync(path.join(repoRoot, 'src/config.ts'), 'utf8');
  const names = new Set([...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(env, '([A-Z][A-Z0-9_]+)'/g)].map((match) => match[1] ?? match[2]));
  assert.ok(names.has('CALLGATE_MIGRATE_ON_START') && names.has('CALLGATE_EVENT_RETENTION_DAYS'), [...names].join());
  for (const name of names) assert.ok(readme.includes(`| \`${name}\` |`), `${name} is in the README's Configuration table`);
});

it('the README shows every CLI command and links the deployment guide', async () => {
  const help = await runCli({ CALLGATE_LOG_LEVEL: 'silent' }, ['--help']);
  const commands = [
    ...help.stdout
      .split('Commands:\n')[1]!
      .split('\n\n')[0]!
      .matchAll(/^ {2}(\S+(?: [a-z-]+)?) {2}/gm),
  ].map((m) => m[1]!);
  assert.ok(commands.includes('migrate') && commands.includes('calls list'), commands.join());
  for (const command of commands) assert.ok(readme.includes(`npx callgate ${command}`), `README shows npx callgate ${command}`);
  assert.match(readme, /\[docs\/deployment\.md\]\(docs\/deployment\.md\)/);
  for (const heading of [
    'One machine with SQLite',
    'N API processes and M workers',
    'Migrations in a rolling deploy',
    'Backups',
    'What to watch',
    'Limits measured',
  ]) {
    assert.ok(deployment.includes(heading), heading);
  }
  assert.match(deployment, /\[BENCHMARKS\.md\]\(\.\.\/BENCHMARKS\.md\)/);
});

const systemdAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

it('docs/callgate.service passes systemd-analyze verify', { skip: systemdAnalyze ? false : 'systemd-analyze is not installed' }, () => {
  // ExecStart must name an executable that exists here: this machine's node where it is not /usr/bin/node.
  const unit = fs.readFileSync(path.join(repoRoot, 'docs/callgate.service'), 'utf8').replace('/usr/bin/node', process.execPath);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-unit-'));
  try {
    const file = path.join(dir, 'callgate.service');
    fs.writeFileSync(file, unit);
    const result = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    assert.equal(result.status, 0, result.stderr);
    // Unknown keys are only warnings: the unit must have none.
    assert.equal(result.stderr.trim(), '', result.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('docs/callgate.service starts node with the memory settings of npm start', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const start = /^exec env ((?:[A-Z_]+=\S+ )+)node ((?:--\S+ )*)dist\/server\.js$/.exec(manifest.scripts.start);
  assert.ok(start, manifest.scripts.start);
  const unit = fs.readFileSync(path.join(repoRoot, 'docs/callgate.service'), 'utf8');
  const execStart = /^ExecStart=\/usr\/bin\/node ((?:--\S+ )*)\/opt\/callgate\/dist\/server\.js$/m.exec(unit);
  assert.ok(execStart, 'ExecStart runs /usr/bin/node [flags] /opt/callgate/dist/server.js');
  assert.equal(execStart[1], start[2], 'the same node flags');
  const environment = [...unit.matchAll(/^Environment=(\S+)$/gm)].map((match) => match[1]!);
  assert.deepEqual(environment, start[1]!.trim().split(' '), 'the same environment settings');
  // The guide's Memory section names what it explains.
  for (const setting of [...environment, ...start[2]!.trim().split(' ')]) assert.ok(deployment.includes(setting), setting);
});

it('the metric names in the README and the deployment guide are the ones src/features/metrics defines', () => {
  const dir = path.join(repoRoot, 'src/features/metrics');
  const source = fs
    .readdirSync(dir)
    .map((file) => fs.readFileSync(path.join(dir, file), 'utf8'))
    .join('\n');
  const defined = new Set([...source.matchAll(/'(callgate_[a-z_]+)'/g)].map((match) => match[1]!));
  assert.ok(defined.has('callgate_webhook_deliveries_pending') && defined.has('callgate_http_requests_total'), [...defined].join());
  // A histogram is queried through its _bucket, _sum and _count series.
  const named = (text: string) =>
    new Set([...text.matchAll(/\bcallgate_[a-z_]+/g)].map((match) => match[0].replace(/_(bucket|sum|count)$/, '')));
  for (const [document, text] of [
    ['README.md', readme],
    ['docs/deployment.md', deployment],
  ] as const) {
    for (const name of named(text)) assert.ok(defined.has(name), `${document} names ${name}, which no metric has`);
  }
  for (const name of defined) assert.ok(readme.includes(`\`${name}\``), `the README's metrics table lists ${name}`);
  for (const name of [
    'callgate_webhook_oldest_due_age_seconds',
    'callgate_job_seconds_since_last_pass',
    'callgate_provider_request_failures_total',
  ]) {
    assert.ok(deployment.includes(name), `the deployment guide alerts on ${name}`);
  }
  assert.doesNotMatch(deployment, /not in this version/);
  assert.match(deployment, /`GET \/readyz`/);
  assert.match(deployment, /CALLGATE_METRICS_PORT/);
  assert.match(deployment, /CALLGATE_METRICS_TOKEN/);
});

it("the guide's /etc/callgate/callgate.env is read by systemd's EnvironmentFile as meant: a valid configuration", () => {
  const block = /`\/etc\/callgate\/callgate\.env` \(mode[\s\S]*?```sh\n([\s\S]*?)```/.exec(deployment)?.[1];
  assert.ok(block, 'the guide gives the env file');
  // systemd.exec(5): lines starting with # or ; are comments; elsewhere a # is part of the value (an inline
  // comment is not stripped, systemd/systemd#12527), and only the white space around the value is.
  const env: Record<string, string> = {};
  for (const line of block.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const at = trimmed.indexOf('=');
    env[trimmed.slice(0, at).trim()] = trimmed.slice(at + 1).trim();
  }
  assert.ok(Object.keys(env).length >= 5, JSON.stringify(env));
  for (const [name, value] of Object.entries(env)) assert.ok(!value.includes('#'), `${name}=${value}: systemd keeps an inline comment`);
  assert.doesNotThrow(() => loadConfig(env));
});

// The guide's CLI runs as the callgate user (sudo -u callgate): the env file it sources must be readable by
// that group, and the folder a backup is written to must be callgate's, or a new operator's first command
// fails with a permission error.
it("the guide's files that the CLI reads or writes as the callgate user are made so", () => {
  assert.match(deployment, /sudo -u callgate sh -c '[^']*\. \/etc\/callgate\/callgate\.env/);
  assert.match(deployment, /install -m 0640 -o root -g callgate \/dev\/null \/etc\/callgate\/callgate\.env/);
  const folders = [...deployment.matchAll(/callgate backup --to (\/\S*)\/[^/\s]*/g)].map((match) => match[1]);
  assert.ok(folders.length > 0, 'the guide gives a backup command');
  for (const folder of folders) {
    assert.ok(deployment.includes(`install -d -m 0750 -o callgate -g callgate ${folder} `), `the guide makes ${folder} callgate's`);
  }
});

it('the guide has the load balancer check /readyz and alerts on the metrics the README documents', () => {
  assert.doesNotMatch(deployment, /not in\s+this\s+version/, 'the guide says /metrics and /readyz are still to come');
  assert.match(deployment, /balancer[^.]*`GET \/readyz`/);
  for (const setting of ['CALLGATE_METRICS_TOKEN', 'CALLGATE_METRICS_PORT']) assert.ok(deployment.includes(setting), setting);
  const watched = new Set([...deployment.matchAll(/`(callgate_[a-z_]+)`/g)].map((match) => match[1]!));
  assert.ok(watched.size >= 4, [...watched].join());
  for (const metric of watched) assert.ok(readme.includes(`\`${metric}\``), `${metric} is in the README's metrics table`);
});
