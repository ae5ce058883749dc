/**
 * The package another project installs (npm pack, then npm install of the file): packing builds it first,
 * so the tarball always has the compiled entry point its exports name, with its types and the README.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';
import { promisify } from 'node:util';

const packageDir = fileURLToPath(new URL('..', import.meta.url));

it('npm pack builds the client and packs what its exports name, with its README', { timeout: 120_000 }, async () => {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts=false'], {
    cwd: packageDir,
    maxBuffer: 16 * 1024 * 1024,
  });
  // npm prints the prepack script's own lines before the JSON report.
  const report = JSON.parse(stdout.slice(stdout.indexOf('[')));
  const files = new Set<string>(report[0].files.map((file: { path: string }) => file.path));
  const entry = manifest.exports['.'];
  for (const target of [entry.default, entry.types]) assert.ok(files.has(target.replace(/^\.\//, '')), `${target} is packed`);
  assert.ok(files.has('README.md') && files.has('package.json'));
  assert.deepEqual(
    [...files].filter((file) => !/^(dist\/|README\.md$|package\.json$)/.test(file)),
    [],
    'nothing but the build, the README and the manifest',
  );
});
