/**
 * The operator's documents against the code: every setting src/config.ts reads is in docs/configuration.md
 * with its default, every CLI command in docs/cli.md, every metric in the deployment guide's metrics table,
 * the guide is linked from the README, and the systemd unit it gives passes `systemd-analyze verify` where
 * systemd is installed.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { it } from 'node:test';
import { loadConfig } from '../../src/config.js';
import { providerCatalogue } from '../../src/features/providers/provider-catalogue.js';
import { runCli } from '../support/cli-runner.js';
import { repoRoot } from '../support/repo-root.js';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const readme = read('README.md');
const deployment = read('docs/deployment.md');
const configuration = read('docs/configuration.md');
const cli = read('docs/cli.md');
const docs = fs
  .readdirSync(path.join(repoRoot, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => [`docs/${file}`, read(`docs/${file}`)] as const);

/** The first column of the deployment guide's metrics table: its rows start with a metric's name. */
const metricsTable = [...deployment.matchAll(/^\| (`(?:callgate|process|nodejs)_[^|]*)\|/gm)].map((match) => match[1]!).join('\n');
/** The guide's alerting rules, from "What to alert on" to the next paragraph heading. */
const alerts = /\*\*What to alert on\*\*([\s\S]*?)\*\*Beside the metrics:\*\*/.exec(deployment)?.[1] ?? '';

it('docs/configuration.md documents every setting that src/config.ts reads, with its default and range', () => {
  const source = read('src/config.ts');
  const names = new Set([...source.matchAll(/env\.([A-Z][A-Z0-9_]+)|\(env, '([A-Z][A-Z0-9_]+)'/g)].map((match) => (match[1] ?? match[2])!));
  // The providers' settings are read by the names their catalogue entries give (keys and secrets unset by default).
  const providerDefaults = new Map(
    providerCatalogue.flatMap(({ settings }) => [
      [settings.apiKey, 'unset'],
      [settings.baseUrl.name, `\`${settings.baseUrl.default}\``],
      ...(settings.webhookSecret ? [[settings.webhookSecret, 'unset'] as const] : []),
    ]),
  );
  for (const name of providerDefaults.keys()) names.add(name);
  assert.ok(names.has('CALLGATE_MIGRATE_ON_START') && names.has('CALLGATE_EVENT_RETENTION_DAYS'), [...names].join());
  const table = [...configuration.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \| ([^|]+) \| ([^|]+) \|/gm)];
  const rows = new Map(table.map((match) => [match[1]!, match[2]!.trim()] as const));
  const accepted = new Map(table.map((match) => [match[1]!, match[3]!.trim()] as const));
  for (const name of names) assert.ok(rows.has(name), `${name} is in the table of docs/configuration.md`);
  for (const name of rows.keys()) assert.ok(names.has(name), `docs/configuration.md lists ${name}, which src/config.ts does not read`);

  // Each default the source gives as a literal is the one the table shows; a setting read only when set
  // (`env.X?.trim() ? … : undefined`) and one with no default are "unset".
  const defaults = new Map<string, string>();
  for (const match of source.matchAll(/(?:integer|boolean)\(env, '([A-Z0-9_]+)', ([\d_]+|true|false)\b/g)) {
    defaults.set(match[1]!, `\`${match[2]!.replaceAll('_', '')}\``);
  }
  for (const match of source.matchAll(/env\.([A-Z0-9_]+)\?\.trim\(\) \|\| '([^']*)'/g)) defaults.set(match[1]!, `\`${match[2]}\``);
  for (const match of source.matchAll(/env\.([A-Z0-9_]+)\?\.trim\(\) \?/g)) defaults.set(match[1]!, 'unset');
  for (const match of source.matchAll(/env\.([A-Z0-9_]+)\?\.trim\(\) \|\| undefined/g)) defaults.set(match[1]!, 'unset');
  for (const [name, value] of providerDefaults) defaults.set(name, value);
  assert.ok(defaults.size >= 30, `the defaults of src/config.ts were found (${defaults.size}): ${[...defaults.keys()].join()}`);
  for (const [name, value] of defaults) assert.equal(rows.get(name), value, `the default of ${name}`);

  // Each whole-number setting shows the bounds it is checked against.
  const ranges = [...source.matchAll(/integer\(env, '([A-Z0-9_]+)', [\d_]+, ([\d_]+), ([\d_]+)\)/g)];
  assert.ok(ranges.length >= 15, `the ranges of src/config.ts were found (${ranges.length})`);
  for (const [, name, min, max] of ranges) {
    const range = `\`${min!.replaceAll('_', '')}\` to \`${max!.replaceAll('_', '')}\``;
    assert.ok(accepted.get(name!)?.startsWith(range), `${name} accepts ${range}: the table says ${accepted.get(name!)}`);
  }
});

it('docs/cli.md shows every CLI command, and the README links the deployment guide', async () => {
  const help = await runCli({ CALLGATE_LOG_LEVEL: 'silent' }, ['--help']);
  const commands = [
    ...help.stdout
      .split('Commands:\n')[1]!
      .split('\n\n')[0]!
      .matchAll(/^ {2}(\S+(?: [a-z-]+)?) {2}/gm),
  ].map((m) => m[1]!);
  assert.ok(commands.includes('migrate') && commands.includes('calls list'), commands.join());
  for (const command of commands) assert.ok(cli.includes(`npx callgate ${command}`), `docs/cli.md shows npx callgate ${command}`);
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

it('the metric names in the README and docs/ are the ones src/features/metrics defines, each in the metrics table', () => {
  const dir = path.join(repoRoot, 'src/features/metrics');
  const source = fs
    .readdirSync(dir)
    .map((file) => fs.readFileSync(path.join(dir, file), 'utf8'))
    .join('\n');
  const defined = new Set([...source.matchAll(/'(callgate_[a-z_]+)'/g)].map((match) => match[1]!));
  assert.ok(defined.has('callgate_webhook_deliveries_pending') && defined.has('callgate_http_requests_total'), [...defined].join());
  // A histogram is queried through its _bucket, _sum and _count series. `callgate_dial_id` is no metric: the
  // key that carries the dial id to the providers (docs/providers.md).
  const notMetrics = new Set(['callgate_dial_id']);
  const named = (text: string) =>
    new Set(
      [...text.matchAll(/\bcallgate_[a-z_]+/g)]
        .map((match) => match[0].replace(/_(bucket|sum|count)$/, ''))
        .filter((name) => !notMetrics.has(name)),
    );
  for (const [document, text] of [['README.md', readme] as const, ...docs]) {
    for (const name of named(text)) assert.ok(defined.has(name), `${document} names ${name}, which no metric has`);
  }
  for (const name of defined) assert.ok(metricsTable.includes(`\`${name}\``), `the deployment guide's metrics table lists ${name}`);
  for (const name of [
    'callgate_webhook_oldest_due_age_seconds',
    'callgate_job_seconds_since_last_pass',
    'callgate_provider_request_failures_total',
  ]) {
    assert.ok(alerts.includes(name), `the deployment guide alerts on ${name}`);
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

it('the guide has the load balancer check /readyz and alerts on the metrics its metrics table documents', () => {
  assert.doesNotMatch(deployment, /not in\s+this\s+version/, 'the guide says /metrics and /readyz are still to come');
  assert.match(deployment, /balancer[^.]*`GET \/readyz`/);
  for (const setting of ['CALLGATE_METRICS_TOKEN', 'CALLGATE_METRICS_PORT']) assert.ok(deployment.includes(setting), setting);
  const watched = new Set([...alerts.matchAll(/\b(callgate_[a-z_]+)/g)].map((match) => match[1]!.replace(/_(bucket|sum|count)$/, '')));
  assert.ok(watched.size >= 4, [...watched].join());
  for (const metric of watched) assert.ok(metricsTable.includes(`\`${metric}\``), `${metric} is in the guide's metrics table`);
});
