/**
 * What a new operator reads before anything else: no unfilled placeholder in the README or docs/, one
 * receiver path for the local webhook setup in the README's quick start and docs/webhooks.md, the deployment
 * guide naming /healthz and GET /, and docs/api.md saying that Idempotency-Key is optional.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const readme = read('README.md');
const webhooksDoc = read('docs/webhooks.md');
const documents = [
  'README.md',
  ...fs
    .readdirSync(path.join(repoRoot, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
];

it('has no unfilled {…_url} placeholder', () => {
  assert.ok(documents.includes('docs/webhooks.md') && documents.length > 2, documents.join());
  for (const document of documents) assert.deepEqual(read(document).match(/\{[a-z_]*url\}/gi) ?? [], [], document);
});

it('uses one path for the local receiver in the README and docs/webhooks.md', () => {
  const local = (text: string) => new Set(text.match(/http:\/\/127\.0\.0\.1:8080\/[a-z/]*/g) ?? []);
  const paths = new Set([...local(readme), ...local(webhooksDoc)]);
  assert.ok(local(readme).size > 0 && local(webhooksDoc).size > 0, 'both show the local receiver');
  assert.deepEqual([...paths], ['http://127.0.0.1:8080/webhooks']);
});

it('documents GET /healthz, GET /, and that Idempotency-Key is optional but recommended', () => {
  const deployment = read('docs/deployment.md');
  assert.match(deployment, /`GET \/healthz` answers `200 \{"status":"ok","database":"sqlite"\}`/);
  assert.match(deployment, /`GET \/` sends a browser\s+to the portal/);
  assert.match(read('docs/api.md'), /`Idempotency-Key: [^`]+` on `POST \/v1\/calls` is optional\s+but\s+recommended/);
});
