/**
 * The layout of src/ as docs/development.md describes it: features never import the shell (the files at the
 * top of src/, config.ts aside) nor their clients (the portal, the CLI); the webhook rooms are layers, each
 * importing only those below it; the dials (calls/dial*: the one dial driver and the dial job) import nothing
 * of the batches, whose recipients are one origin among others; and feature folders do not import each other
 * in a cycle, but for the known edges listed below. Imports are read with TypeScript's own scanner: static
 * imports, `export … from` and dynamic imports, type-only ones included (a type names the other side as
 * surely as a value does).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import ts from 'typescript';
import { repoRoot } from './support/repo-root.js';

/** The webhook rooms, bottom first: each may import those before it, never one after it. */
const webhookRooms = ['events', 'webhook-endpoints', 'webhook-delivery'];

/**
 * Imports between feature folders that close a cycle and are waiting to be turned round, as `from → to`.
 * Without them the folders form no cycle; an entry that no longer closes one fails the test too, so that
 * the list only shrinks.
 */
const waitingForLayers = new Set<string>([
  // A call's end moves its batch on, in its transaction: batch-progress.service.ts is the batches' but the calls call it.
  'calls → batches',
  // The call monitor and the webhook dispatcher count into the metrics registry, whose worker metrics read calls and deliveries.
  'calls → metrics',
  'webhook-delivery → metrics',
  // The suppressions routes word a bad number as the calls' routes do (createCallPatternHints); calls check suppressions.
  'suppressions → calls',
  // The providers' webhooks record outcomes through the calls, and their interface and registry name the agents' provider and rows.
  'providers → calls',
  'providers → agents',
  // The events API's schema shows batch.completed's data as the batches' Batch (batches write the event).
  'events → batches',
]);

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

/** The files of src/ a file imports (relative specifiers only: packages are in no layer). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(repoRoot, file), 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => path.posix.join(path.posix.dirname(file), specifier).replace(/\.js$/, '.ts'));
}

const imports = sourceFiles('src').flatMap((file) => importsOf(file).map((target) => ({ file, target })));
/** `calls` for src/features/calls/…, null for a file outside the features. */
const featureOf = (file: string): string | null => /^src\/features\/([^/]+)\//.exec(file)?.[1] ?? null;
/** The imports from one feature folder into another, by `from → to`, with the files that make each. */
const featureEdges = new Map<string, string[]>();
for (const { file, target } of imports) {
  const from = featureOf(file);
  const to = featureOf(target);
  if (from === null || to === null || from === to) continue;
  const edge = `${from} → ${to}`;
  featureEdges.set(edge, [...(featureEdges.get(edge) ?? []), `${file} imports ${target}`]);
}
const edgeEnds = (edge: string) => edge.split(' → ') as [string, string];

it('never imports the shell, the portal or the CLI from a feature', () => {
  // The top of src/ is the shell (app.ts, server.ts, container.ts, openapi-file.ts), but for config.ts, which imports no feature.
  const shell = (target: string) => /^src\/[^/]+\.ts$/.test(target) && target !== 'src/config.ts';
  const upward = imports
    .filter(({ file, target }) => featureOf(file) !== null && (shell(target) || /^src\/(portal|cli)\//.test(target)))
    .map(({ file, target }) => `${file} imports ${target}`);
  assert.deepEqual(upward, []);
});

it('imports the webhook rooms downwards only: delivery above endpoints above events', () => {
  const upward = [...featureEdges]
    .filter(([edge]) => {
      const [from, to] = edgeEnds(edge);
      return webhookRooms.includes(from) && webhookRooms.indexOf(to) > webhookRooms.indexOf(from);
    })
    .flatMap(([, files]) => files);
  assert.deepEqual(upward, []);
});

it('keeps the dials free of the batches: the dial driver and the dial job reach a batch recipient through its port only', () => {
  // dial-driver.ts, dial-origin.ts, dials.service.ts, dials.job.ts, …: the one exactly-once dial, whatever asks for it.
  const dialFiles = sourceFiles('src/features/calls').filter((file) => /^dials?[.-]/.test(path.posix.basename(file)));
  assert.ok(
    dialFiles.includes('src/features/calls/dial-driver.ts') && dialFiles.includes('src/features/calls/dials.service.ts'),
    dialFiles.join(),
  );
  const intoBatches = imports
    .filter(({ file, target }) => dialFiles.includes(file) && featureOf(target) === 'batches')
    .map(({ file, target }) => `${file} imports ${target}`);
  assert.deepEqual(intoBatches, []);
});

/** Whether `to` is reached from `from` over `edges`. */
function reaches(edges: readonly string[], from: string, to: string): boolean {
  const seen = new Set([from]);
  const queue = [from];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    if (node === to) return true;
    for (const [start, end] of edges.map(edgeEnds)) {
      if (start !== node || seen.has(end)) continue;
      seen.add(end);
      queue.push(end);
    }
  }
  return false;
}

it('never imports one feature folder from another through a cycle, but for the edges waiting for layers', () => {
  const all = [...featureEdges.keys()];
  const kept = all.filter((edge) => !waitingForLayers.has(edge));
  // An edge closes a cycle when its end leads back to its start.
  const closing = kept.filter((edge) => reaches(kept, edgeEnds(edge)[1], edgeEnds(edge)[0])).flatMap((edge) => featureEdges.get(edge)!);
  assert.deepEqual(closing, [], 'these imports close a cycle between feature folders: turn one round');
  const turned = [...waitingForLayers].filter((edge) => !featureEdges.has(edge) || !reaches(all, edgeEnds(edge)[1], edgeEnds(edge)[0]));
  assert.deepEqual(turned, [], 'these close no cycle any more: take them off waitingForLayers');
});
