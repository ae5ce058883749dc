// `npm run openapi`: writes the OpenAPI document of the /v1 API to docs/openapi.json (the same document as
// GET /v1/openapi.json). `--check` writes nothing and exits 1 when the committed file is out of date.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateOpenApiJson, openApiFile } from '../src/openapi-file.js';

const target = path.join(fileURLToPath(new URL('..', import.meta.url)), openApiFile);
const json = await generateOpenApiJson();
if (process.argv.includes('--check')) {
  const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : '';
  if (current !== json) {
    console.error(`${openApiFile} is out of date: run npm run openapi`);
    process.exit(1);
  }
  console.log(`${openApiFile} is up to date`);
} else {
  fs.writeFileSync(target, json);
  console.log(`wrote ${openApiFile} (${json.length.toLocaleString('en-US')} bytes)`);
}
