/**
 * What a new operator reads before anything else: no unfilled placeholder, one receiver path for the local
 * webhook setup in the README and docs/webhooks.md, and the README naming /healthz, GET /, and that
 * Idempotency-Key is optional (spec 4.1).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { repoRoot } from '../support/repo-root.js';

const readme = fs.readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
const webhooksDoc = fs.readFileSync(path.join(repoRoot, 'docs/webhooks.md'), 'utf8');

it('has no unfilled {…_url} placeholder', () => {
  for (const [name, text] of [
    ['README.md', readme],
    ['docs/webhooks.md', webhooksDoc],
  ] as const) {
    assert.deepEqual(text.match(/\{[a-z_]*url\}/gi) ?? [], [], name);
  }
});

it('uses one path for the local receiver in the README and docs/webhooks.md', () => {
  const local = (text: string) => new Set(text.match(/http:\/\/127\.0\.0\.1:8080\/[a-z/]*/g) ?? []);
  const paths = new Set([...local(readme), ...local(webhooksDoc)]);
  assert.ok(local(readme).size > 0 && local(webhooksDoc).size > 0, 'both show the local receiver');
  assert.deepEqual([...paths], ['http://127.0.0.1:8080/webhooks']);
});

it('documents GET /healthz, GET /, and that Idempotency-Key is optional but recommended', () => {
  assert.match(readme, /`GET \/healthz` answers `200 \{"status":"ok","database":"sqlite"\}`/);
  assert.match(readme, /`GET \/` sends a browser\s+to the portal/);
  assert.match(readme, /`Idempotency-Key: [^`]+` on `POST \/v1\/calls` is optional \(spec\s+4\.1\) but recommended/);
});
