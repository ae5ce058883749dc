#!/usr/bin/env node
// Runs every test/**/*.test.ts and clients/*/test/**/*.test.ts file with Node's own test runner (TypeScript through tsx).
// Files run in parallel, two at a time (this machine has two cores); each makes its own databases.
// The runner starts files in the order given. Those that start processes (servers, builds, a browser) are
// the longest by far: they start first, so that the short ones fill in beside them instead of one long
// file running alone at the end while the other core idles.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return findTests(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

const filters = process.argv.slice(2);
const startsProcesses = (file) => /\b(startServerProcess|processesOf|spawn|launchBrowser)\(/.test(readFileSync(file, 'utf8'));
// The TypeScript client's tests run against the real server too (clients/typescript/test).
const matched = [...findTests('test'), ...findTests('clients/typescript/test')]
  .filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter)))
  .sort();
const files = [...matched.filter(startsProcesses), ...matched.filter((file) => !startsProcesses(file))];
if (files.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}
const concurrency = process.env.CALLGATE_TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...files],
  { stdio: 'inherit' },
);
process.exit(result.status ?? 1);
