/**
 * The docs stand alone: a reader of a clone has the repository and nothing beside it. No page of the README,
 * docs/, the clients' READMEs and the examples' READMEs (nor the OpenAPI document) links or names a path that
 * leaves the repository: a relative path that climbs above its root (`../shared/…` from the README), a link
 * to an absolute path, or a path on the machine the page was written on (a home folder, the folder that holds
 * the clone). Paths on the machine callgate is deployed to (`/etc/callgate`, `/var/lib/callgate`) are
 * instructions, not references, and stay. Nor does a page cite a section of a document the reader does not
 * have ("spec 4.1 rule 4", "spec 7 and 9"): each rule is said in the docs' own words, docs/api.md the reference.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const exists = (dir: string) => fs.existsSync(path.join(repoRoot, dir));

/** The files under `dir` (a repository path), at any depth. */
function filesUnder(dir: string): string[] {
  if (!exists(dir)) return [];
  return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(relative);
    return [relative];
  });
}

const pages = [
  'README.md',
  'BENCHMARKS.md',
  ...filesUnder('docs').filter((file) => /^docs\/[^/]+\.md$/.test(file)),
  ...fs
    .readdirSync(path.join(repoRoot, 'clients'))
    .map((name) => `clients/${name}/README.md`)
    .filter(exists),
  ...filesUnder('examples').filter((file) => /\/README[^/]*$/i.test(file)),
];

/**
 * Where the clone lives on this machine: a page naming it, or the folder that holds it (where the writer kept
 * their other files), names a path outside. A system folder that holds it (a clone in /tmp) is not counted:
 * the docs name such folders as instructions (`npm pack --pack-destination /tmp`).
 */
const cloneRoot = path.resolve(repoRoot).split(path.sep).join('/');
const cloneParent = path.posix.dirname(cloneRoot);
const systemFolders = new Set(['/', '/tmp', '/var', '/var/tmp', '/opt', '/srv', '/usr', '/etc', '/mnt']);
const writersFolders = [cloneRoot, ...(systemFolders.has(cloneParent) ? [] : [cloneParent])];

/** Whether a repository path, relative to the page at `page`, resolves outside the repository's root. */
function leavesRoot(page: string, target: string): boolean {
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(page), target));
  return resolved === '..' || resolved.startsWith('../');
}

/** The paths of a page (or of any text shown to users, at `page`) that leave the repository, each with why. */
function pathsOutside(page: string, text: string): string[] {
  const found: string[] = [];
  // Link targets: inline [text](target), reference definitions [id]: target, and HTML href / src.
  const targets = [
    ...[...text.matchAll(/\]\(\s*<?([^)\s>]+)>?[^)]*\)/g)].map((match) => match[1]!),
    ...[...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!),
    ...[...text.matchAll(/\b(?:href|src)\s*=\s*["']([^"']+)["']/gi)].map((match) => match[1]!),
  ];
  for (const target of targets) {
    if (/^file:/i.test(target)) found.push(`links ${target}: a file on the writer's machine`);
    else if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#'))
      continue; // https:, mailto:, an anchor
    else if (target.startsWith('/') || target.startsWith('~') || /^[a-z]:[\\/]/i.test(target))
      found.push(`links ${target}: an absolute path`);
    else if (leavesRoot(page, target.split('#')[0]!)) found.push(`links ${target}: outside the repository`);
  }
  // Any relative path in the text, prose or code, that climbs above the root from the page's folder.
  for (const match of text.matchAll(/(?:^|[\s`'"(=:[])((?:\.\.\/)+[^\s`'")\]]*)/g)) {
    const target = match[1]!;
    if (leavesRoot(page, target)) found.push(`names ${target}: outside the repository`);
  }
  // Paths on the machine the page was written on.
  // (`~/.n8n/nodes` is the reader's own folder, named as an instruction: it stays.)
  for (const match of text.matchAll(/(?:file:\/\/|\/(?:home|Users|root)\/|[A-Za-z]:\\Users\\)[^\s`'")\]]*/g)) {
    found.push(`names ${match[0]}: a path on the writer's machine`);
  }
  for (const folder of writersFolders) {
    for (const match of text.matchAll(
      new RegExp(`${folder.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?![\\w.-])(?:/[^\\s\`'")\\]]*)?`, 'g'),
    )) {
      found.push(`names ${match[0]}: the folder that holds this clone`);
    }
  }
  // The specification callgate was written from, by its place or its file's name: it is not in the clone.
  for (const match of text.matchAll(/[^\s`'"(]*(?:\.\.\/shared\b|shared\/spec|outbound-voice-call-api)[^\s`'")]*/g)) {
    found.push(`names ${match[0]}: a document outside the repository`);
  }
  return found;
}

/** Citations of a numbered section of the specification ("spec 4.1 rule 4", "spec 7 and 9", "section 2.2 of the spec"). */
function specCitations(text: string): string[] {
  return [
    ...text.matchAll(/\bspec(?:ification)?(?:'s)?[\s(]+(?:section\s+|§\s*)?\d+(?:\.\d+)*(?:\s+rule\s+\d+)?/gi),
    ...text.matchAll(/\bsections?\s+\d+(?:\.\d+)*\s+of\s+the\s+spec/gi),
  ].map((match) => match[0].replace(/\s+/g, ' '));
}

it('covers the README, docs/, the clients and the examples', () => {
  for (const page of ['README.md', 'docs/api.md', 'docs/providers.md', 'clients/typescript/README.md', 'clients/python/README.md']) {
    assert.ok(pages.includes(page), `${page} is checked`);
  }
});

it('no page links or names a path that leaves the repository', () => {
  const found = pages.flatMap((page) => pathsOutside(page, read(page)).map((finding) => `${page} ${finding}`));
  assert.deepEqual(found, []);
});

it('no page cites a section of the specification: each says the rule itself', () => {
  const found = pages.flatMap((page) => specCitations(read(page)).map((citation) => `${page}: "${citation}"`));
  assert.deepEqual(found, []);
});

it('the OpenAPI document (and so /docs) names no path outside and cites no section of the specification', () => {
  const openapi = read('docs/openapi.json');
  assert.deepEqual(pathsOutside('docs/openapi.json', openapi), []);
  assert.deepEqual(specCitations(openapi), []);
});

it('finds each kind of path that leaves, and each kind of citation (the checks above can fail)', () => {
  assert.equal(pathsOutside('README.md', 'It implements (`../shared/spec/outbound-voice-call-api.md`).').length, 2);
  assert.deepEqual(pathsOutside('README.md', 'See [the spec](../spec.md).'), [
    'links ../spec.md: outside the repository',
    'names ../spec.md: outside the repository',
  ]);
  assert.deepEqual(pathsOutside('clients/python/README.md', 'See [the README](../../README.md#quick-start) and `../../docs/api.md`.'), []);
  assert.equal(pathsOutside('clients/python/README.md', 'Run `node ../../../tools/x.mjs`.').length, 1);
  assert.equal(pathsOutside('docs/api.md', 'See [notes](/home/ada/notes.md).').length, 2);
  assert.equal(pathsOutside('docs/api.md', '[notes]: file:///tmp/notes.md').length, 2);
  assert.equal(pathsOutside('docs/api.md', '<a href="/srv/notes.html">notes</a>').length, 1);
  const besideTheClone = pathsOutside('docs/api.md', `Read ${cloneRoot}/docs/api.md first.`);
  assert.ok(
    besideTheClone.some((finding) => finding.endsWith('the folder that holds this clone')),
    besideTheClone.join(),
  );
  assert.equal(pathsOutside('docs/development.md', 'the spec (`../shared/notes.md`)').length, 1);
  assert.deepEqual(pathsOutside('clients/n8n/README.md', 'Copy it into `~/.n8n/nodes`.'), []);
  assert.deepEqual(
    pathsOutside('docs/deployment.md', 'Set `EnvironmentFile=/etc/callgate/callgate.env`; `POST /v1/calls`; [api](api.md#errors).'),
    [],
  );
  assert.deepEqual(specCitations("optional (spec\n4.1) but; (spec 4.1 rule 4); Codes are stable (spec 7 and 9); spec 2.2's fields"), [
    'spec 4.1',
    'spec 4.1 rule 4',
    'spec 7',
    'spec 2.2',
  ]);
  assert.deepEqual(specCitations('section 8 of the spec; the specification §5'), ['specification §5', 'section 8 of the spec']);
  assert.deepEqual(specCitations('The request is specified in [§5](#5-retention); `spec.required`; a spec-compliant client'), []);
});
