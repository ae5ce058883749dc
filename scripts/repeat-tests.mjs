#!/usr/bin/env node
// Runs some test files many times in a row, to show that a test passes every time and not just once:
//   npm run test:repeat -- <part of a file name>… [--times N] [--keep-going]
// Each matching file runs alone, one run after another (one process per run, through scripts/run-tests.mjs,
// so on SQLite and PostgreSQL as in the full suite), and the first failure stops that file's runs unless
// --keep-going is given. A line per file says how many runs passed ("20/20 passed"); the exit status is 1
// when any run failed. Set CALLGATE_TEST_DIALECT=sqlite or postgres to run one database only.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

function usage(message) {
  console.error(`${message}\nusage: npm run test:repeat -- <part of a file name>… [--times N] [--keep-going]`);
  process.exit(2);
}

const args = process.argv.slice(2);
const filters = [];
let times = 20;
let keepGoing = false;
for (let i = 0; i < args.length; i++) {
  const arg = args[i];
  if (arg === '--keep-going') keepGoing = true;
  else if (arg === '--times' || arg.startsWith('--times=')) {
    const value = arg === '--times' ? args[++i] : arg.slice('--times='.length);
    times = Number(value);
    if (!Number.isInteger(times) || times < 1) usage(`--times wants a whole number above 0, not ${value}`);
  } else if (arg.startsWith('--')) usage(`unknown option ${arg}`);
  else filters.push(arg);
}
if (filters.length === 0) usage('name at least one test file (a part of its path)');

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return findTests(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

const files = [...findTests('test'), ...findTests('clients/typescript/test')]
  .filter((file) => filters.some((f) => file.includes(f)))
  .sort();
if (files.length === 0) usage(`no test file matches ${filters.join(', ')}`);

const summary = [];
for (const file of files) {
  let passed = 0;
  let ran = 0;
  for (let run = 1; run <= times; run++) {
    ran = run;
    const started = Date.now();
    // The file's path names it alone: run-tests.mjs matches by part of a path.
    const result = spawnSync(process.execPath, ['scripts/run-tests.mjs', file], { encoding: 'utf8' });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (result.status === 0) {
      passed += 1;
      console.log(`${file}: run ${run}/${times} passed (${seconds} s)`);
      continue;
    }
    console.log(`${file}: run ${run}/${times} FAILED (${seconds} s, exit ${result.status ?? result.signal})`);
    process.stdout.write(result.stdout);
    process.stderr.write(result.stderr);
    if (!keepGoing) break;
  }
  const line = `${file}: ${passed}/${ran} passed${ran < times ? ` (stopped at the first failure of ${times} runs)` : ''}`;
  summary.push({ line, ok: passed === ran });
}
console.log('');
for (const { line } of summary) console.log(line);
process.exit(summary.every(({ ok }) => ok) ? 0 : 1);
