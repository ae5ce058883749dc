#!/usr/bin/env node
// Runs every test/**/*.test.ts and clients/*/test/**/*.test.ts file with Node's own test runner (TypeScript through tsx).
// Processes run in parallel, two at a time (this machine has two cores); each test makes its own databases.
//
// Files that start processes (servers, builds, a browser) run one to a process, as the runner does by
// default. They are the longest by far and start first, so that the rest fill in beside them instead of one
// long file running alone at the end while the other core idles.
//
// The other files run in a few groups, each group one process that imports its files one after the other.
// A process per file loaded tsx and the whole app anew for each of ~100 files: that was two thirds of the
// CPU those files took (measured: 522 s of CPU and 360 s of wall time alone, against 173 s and 209 s in
// two groups), and it made the suite miss its ten minutes. Their tests share nothing across files but the
// process (each makes its own databases and servers), which the whole suite passing in both shapes shows.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function findTests(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return findTests(full);
    return name.endsWith('.test.ts') ? [full] : [];
  });
}

const filters = process.argv.slice(2);
const startsProcesses = (file) => /\b(startServerProcess|processesOf|spawn|launchBrowser)\(/.test(readFileSync(file, 'utf8'));
// The clients' tests (clients/*/test: TypeScript, Python through python3, the n8n node) run against the real server too.
const clientTests = readdirSync('clients')
  .map((name) => path.join('clients', name, 'test'))
  .filter((dir) => statSync(dir, { throwIfNoEntry: false })?.isDirectory());
const matched = [...findTests('test'), ...clientTests.flatMap(findTests)]
  .filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter)))
  .sort();
if (matched.length === 0) {
  console.error('no test files matched');
  process.exit(1);
}

const concurrency = Number(process.env.CALLGATE_TEST_CONCURRENCY ?? '2');
const alone = matched.filter(startsProcesses);
const grouped = matched.filter((file) => !startsProcesses(file));
// Twice as many groups as processes at once: the groups end at about the same time as the files run alone.
const groupCount = Math.min(grouped.length, concurrency * 2);
const groupDir = mkdtempSync(path.join(os.tmpdir(), 'callgate-test-groups-'));
const groups = Array.from({ length: groupCount }, (_, index) => {
  const files = grouped.filter((_, position) => position % groupCount === index);
  const entry = path.join(groupDir, `group-${index + 1}-of-${groupCount}.test.mjs`);
  const urls = files.map((file) => pathToFileURL(path.resolve(file)).href);
  writeFileSync(entry, `for (const file of ${JSON.stringify(urls, null, 2)}) await import(file);\n`);
  return entry;
});

let status = 1;
try {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...alone, ...groups],
    { stdio: 'inherit' },
  );
  status = result.status ?? 1;
} finally {
  rmSync(groupDir, { recursive: true, force: true });
}
process.exit(status);
