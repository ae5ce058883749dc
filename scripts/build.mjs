#!/usr/bin/env node
// `npm run build`: compiles src/ into dist/, then copies beside their modules the files tsc does not compile
// (the portal's stylesheet and script), so dist/ runs without src/. `--out-dir DIR` builds into DIR instead
// (a test builds into a directory of its own, where no src/ is).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outFlag = process.argv.indexOf('--out-dir');
const outDir = outFlag === -1 ? path.join(root, 'dist') : path.resolve(process.argv[outFlag + 1] ?? '');
if (outFlag !== -1 && process.argv[outFlag + 1] === undefined) {
  console.error('build: --out-dir needs a directory');
  process.exit(2);
}

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', outDir], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

const src = path.join(root, 'src');
fs.cpSync(src, outDir, { recursive: true, filter: (from) => !from.endsWith('.ts') || fs.statSync(from).isDirectory() });
