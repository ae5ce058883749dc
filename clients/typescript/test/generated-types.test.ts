/**
 * The chain that keeps the client's types the server's own: the route schemas give the document (the app's
 * GET /v1/openapi.json, committed as docs/openapi.json), and the document gives src/generated/openapi.ts.
 * Both files must be what their source gives now; `npm run openapi`, then `npm run generate` in
 * clients/typescript, write them again.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { generateOpenApiJson, openApiFile } from '../../../src/openapi-file.js';
import { repoRoot } from '../../../test/support/repo-root.js';

interface Generator {
  generatedSource(document?: unknown): Promise<string>;
  readonly documentPath: string;
  readonly generatedPath: string;
}

// A plain .mjs script (run by npm run generate); imported through a variable, its types are declared above.
const scriptUrl = new URL('../scripts/generate-types.mjs', import.meta.url).href;
const generator = (await import(scriptUrl)) as Generator;

it('docs/openapi.json is the document the app serves', async () => {
  assert.equal(generator.documentPath, path.join(repoRoot, openApiFile));
  const committed = readFileSync(generator.documentPath, 'utf8');
  assert.ok(committed === (await generateOpenApiJson()), 'docs/openapi.json is out of date: run npm run openapi');
});

it('src/generated/openapi.ts is what openapi-typescript makes of docs/openapi.json', async () => {
  const committed = readFileSync(generator.generatedPath, 'utf8');
  const fresh = await generator.generatedSource();
  assert.ok(committed === fresh, 'clients/typescript/src/generated/openapi.ts is out of date: run npm run generate in clients/typescript');
  for (const operation of ['createCall', 'listCalls', 'createBatch', 'listBatchRecipients', 'deleteSuppression', 'retrieveEvent']) {
    assert.match(committed, new RegExp(`^    ${operation}: \\{`, 'm'), operation);
  }
});
