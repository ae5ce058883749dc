#!/usr/bin/env node
// `npm run build`: compiles src/ into dist/, then copies beside their modules the files tsc does not compile
// (the portal's stylesheet and script), so dist/ runs without src/. `--out-dir DIR` builds into DIR instead
// (a test builds into a directory of its own, where no src/ is).
//
// A build whose inputs (src/, the tsconfig files, package.json, TypeScript's version) are those of the last
// one into the same folder does nothing (`--force` builds anyway): `npx callgate` in a clone installs the
// repository into npx's cache and runs `prepare`, and rebuilding dist/ there took half a minute and rewrote
// the files of a server running from it.
import { createHash } from 'node:crypto';
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

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');

function filesUnder(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? filesUnder(path.join(dir, entry.name)) : [path.join(dir, entry.name)]));
}

/** What the build is made of: the sources and settings, and the compiler's version. */
function inputsDigest() {
  const hash = createHash('sha256').update(require('typescript/package.json').version);
  const files = [
    ...filesUnder(path.join(root, 'src')),
    ...['tsconfig.json', 'tsconfig.build.json', 'package.json'].map((f) => path.join(root, f)),
  ];
  for (const file of files.sort()) hash.update(path.relative(root, file)).update('\0').update(fs.readFileSync(file));
  return hash.digest('hex');
}

const stamp = path.join(outDir, '.build-inputs');
const digest = inputsDigest();
if (!process.argv.includes('--force') && fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === digest) {
  console.log(`build: ${path.relative(root, outDir) || outDir} is up to date with src/ (npm run build -- --force builds anyway)`);
  process.exit(0);
}
// Written last: a build that failed or stopped half-way is never taken for done.
fs.rmSync(stamp, { force: true });
const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', outDir], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

const src = path.join(root, 'src');
fs.cpSync(src, outDir, { recursive: true, filter: (from) => !from.endsWith('.ts') || fs.statSync(from).isDirectory() });
fs.writeFileSync(stamp, digest);
