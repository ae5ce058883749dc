/**
 * The tests' own house rules, so that they keep reading as specifications: no `describe` body (nor a
 * `forEachDialect` one, which is a describe per database) over 300 lines, and every helper module shared
 * by test files in test/support/, never imported from another test file.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import ts from 'typescript';
import { repoRoot } from './support/repo-root.js';

const maxDescribeLines = 300;
/**
 * Describes over the limit that are known and waiting for their split, as `file: title`. An entry that is
 * no longer over the limit fails the test too, so that the list only shrinks.
 */
const waitingForSplit = new Set<string>([]);
const testRoots = [
  'test',
  ...fs
    .readdirSync(path.join(repoRoot, 'clients'))
    .map((name) => `clients/${name}/test`)
    .filter((dir) => fs.existsSync(path.join(repoRoot, dir))),
];

function filesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return filesUnder(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

const files = testRoots.flatMap(filesUnder);
const testFiles = files.filter((file) => file.endsWith('.test.ts'));

/** Every describe-like call of a file with its title and the number of lines of its body. */
function describeBodies(file: string): { title: string; lines: number }[] {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(repoRoot, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const found: { title: string; lines: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && /^(describe|suite|forEachDialect)(\.\w+)?$/.test(node.expression.getText(source))) {
      const body = node.arguments.find((argument) => ts.isArrowFunction(argument) || ts.isFunctionExpression(argument));
      if (body && (ts.isArrowFunction(body) || ts.isFunctionExpression(body))) {
        const title = node.arguments[0]?.getText(source) ?? '';
        found.push({ title, lines: lineOf(body.body.getEnd()) - lineOf(body.body.getStart(source)) + 1 });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

it(`keeps every describe body within ${maxDescribeLines} lines`, () => {
  const over = testFiles.flatMap((file) =>
    describeBodies(file)
      .filter((describe) => describe.lines > maxDescribeLines)
      .map((describe) => ({ name: `${file}: ${describe.title}`, lines: describe.lines })),
  );
  const unexpected = over.filter((describe) => !waitingForSplit.has(describe.name)).map((d) => `${d.name} (${d.lines} lines)`);
  assert.deepEqual(unexpected, [], 'split these describes by behaviour');
  const split = [...waitingForSplit].filter((name) => !over.some((describe) => describe.name === name));
  assert.deepEqual(split, [], 'these are within the limit now: take them off waitingForSplit');
});

it('keeps every helper module of the tests in test/support/', () => {
  // A file that is neither a test nor a support module (clients' *.check.ts files are type tests: tsc runs them).
  const strays = files.filter((file) => !file.endsWith('.test.ts') && !file.endsWith('.check.ts') && !file.startsWith('test/support/'));
  assert.deepEqual(strays, []);
});

it('never imports one test file from another', () => {
  const importsOfTests = testFiles.flatMap((file) => {
    const text = fs.readFileSync(path.join(repoRoot, file), 'utf8');
    return [...text.matchAll(/from '([^']+\.test)\.js'/g)].map((match) => `${file} imports ${match[1]}`);
  });
  assert.deepEqual(importsOfTests, []);
});
