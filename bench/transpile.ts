/**
 * A bench script as plain JavaScript, so that its process runs without tsx. Under `node --import tsx` the
 * process also carries tsx's module hooks, which Node 20 runs on a thread of their own with a V8 heap of its
 * own: about 35 MB of RSS that `npm start` (node dist/server.js) never has, which the peak RSS of a server under
 * load would count. Each script and the bench files it imports are transpiled (types stripped, nothing
 * checked: `npm run typecheck` does that) into .bench-build/ at the root, beside dist/, so that a script's
 * `new URL('../dist/', import.meta.url)` and its packages resolve as they do from bench/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const outDir = fileURLToPath(new URL('../.bench-build/', import.meta.url));
const written = new Set<string>();

function transpileFile(file: string): void {
  if (written.has(file)) return;
  written.add(file);
  const output = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  }).outputText;
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, path.basename(file).replace(/\.ts$/, '.js')), output);
  // The bench's own modules it still imports once its types are gone (`./x.js`, all in bench/, one folder).
  for (const [, name] of output.matchAll(/\bfrom\s+'\.\/([\w.-]+)\.js'/g)) transpileFile(path.join(path.dirname(file), `${name}.ts`));
}

/** The URL of `script` (a bench/*.ts file) transpiled to JavaScript, with the bench modules it imports. */
export function transpiledScript(script: URL): URL {
  const file = fileURLToPath(script);
  transpileFile(file);
  return pathToFileURL(path.join(outDir, path.basename(file).replace(/\.ts$/, '.js')));
}
