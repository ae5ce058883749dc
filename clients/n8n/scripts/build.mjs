#!/usr/bin/env node
// Builds the package into dist/: TypeScript to CommonJS with tsc (n8n 1.x loads nodes with require), then
// each node's SVG icon beside its compiled file. dist/ is emptied first, so nothing stale is packed.
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
// This package's typescript, or the one of the repository it sits in.
const tsc = createRequire(path.join(root, 'package.json')).resolve('typescript/bin/tsc');

rmSync(path.join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.json')], { stdio: 'inherit' });

function icons(dir) {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return icons(full);
    return name.endsWith('.svg') ? [full] : [];
  });
}

for (const icon of [...icons(path.join(root, 'nodes')), ...icons(path.join(root, 'credentials'))]) {
  const target = path.join(root, 'dist', path.relative(root, icon));
  copyFileSync(icon, target);
  console.log(`copied ${path.relative(root, icon)} -> ${path.relative(root, target)}`);
}
