/**
 * The README is a landing page: at most 200 lines, opening with the two commands of a fresh machine, its
 * magic-number table the simulator's own, and a link to every page of docs/. Every relative link of the
 * README and docs/ (and of the other pages beside them: BENCHMARKS.md, each client's README) reaches a file
 * that exists, and a heading there when it names one.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { simulatorMagicNumbers } from '../../src/features/providers/simulator.provider.js';
import { anchorsOf, prose } from '../support/markdown.js';
import { repoRoot } from '../support/repo-root.js';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const readme = read('README.md');
const docPages = fs
  .readdirSync(path.join(repoRoot, 'docs'))
  .filter((file) => file.endsWith('.md'))
  .map((file) => `docs/${file}`);
const clientPages = fs
  .readdirSync(path.join(repoRoot, 'clients'))
  .map((name) => `clients/${name}/README.md`)
  .filter((file) => fs.existsSync(path.join(repoRoot, file)));
const pages = ['README.md', ...docPages, 'BENCHMARKS.md', ...clientPages];

/** The targets of a page's inline links, outside code blocks and code spans. */
function linksOf(text: string): string[] {
  const withoutCode = prose(text).replace(/`[^`\n]*`/g, 'code');
  return [...withoutCode.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]!);
}

it('the README is at most 200 lines', () => {
  const lines = readme.trimEnd().split('\n').length;
  assert.ok(lines <= 200, `README.md has ${lines} lines`);
});

it("the README's first commands are the two of a fresh machine: run it, and test it", () => {
  const blocks = [...readme.matchAll(/^```[^\n]*\n([\s\S]*?)^```$/gm)].map((match) => match[1]!.trim());
  assert.deepEqual(blocks.slice(0, 2), ['npm install && npm start', 'npm install && npm test']);
});

it('the README links every page of docs/', () => {
  assert.ok(docPages.length >= 8, docPages.join());
  const linked = new Set(linksOf(readme).map((target) => target.split('#')[0]));
  for (const page of docPages) assert.ok(linked.has(page), `README.md links ${page}`);
});

it("the README's magic numbers are the simulator's, each with its outcome", () => {
  const rows = new Map([...readme.matchAll(/^\| `(\+\d+)` \| (.+) \|$/gm)].map((match) => [match[1]!, match[2]!] as const));
  assert.deepEqual([...rows.keys()].sort(), Object.values(simulatorMagicNumbers).sort());
  assert.match(rows.get(simulatorMagicNumbers.busy)!, /`failure_reason` `busy`/);
  assert.match(rows.get(simulatorMagicNumbers.noAnswer)!, /`failure_reason` `no_answer`/);
  assert.match(rows.get(simulatorMagicNumbers.refused)!, /`502 provider_error`/);
});

it('every relative link of the README and docs/ reaches a file, and a heading there when it names one', () => {
  let checked = 0;
  for (const page of pages) {
    for (const target of linksOf(read(page))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check here
      const [file, anchor] = target.split('#') as [string, string | undefined];
      const resolved = file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file));
      assert.ok(fs.existsSync(path.join(repoRoot, resolved)), `${page} links ${target}: ${resolved} does not exist`);
      if (anchor !== undefined && resolved.endsWith('.md')) {
        assert.ok(anchorsOf(read(resolved)).has(anchor), `${page} links ${target}: ${resolved} has no heading #${anchor}`);
      }
      checked++;
    }
  }
  assert.ok(checked >= 50, `only ${checked} relative links found`);
});

it('finds a broken link and a missing heading (the checks above can fail)', () => {
  assert.deepEqual(linksOf('See [a](missing.md#x), `[b](in-code.md)`, and\n```\n[c](in-fence.md)\n```\n'), ['missing.md#x']);
  assert.ok(anchorsOf('## 6. What to watch\n### batch.completed\n## Missed an event? Poll the API').has('6-what-to-watch'));
  assert.ok(anchorsOf('### batch.completed').has('batchcompleted'));
  assert.ok(anchorsOf("### The simulator's magic numbers").has('the-simulators-magic-numbers'));
  assert.ok(!anchorsOf('```sh\n# not a heading\n```\n').has('not-a-heading'));
  assert.deepEqual([...anchorsOf('## Settings\n## Settings')], ['settings', 'settings-1']);
});
