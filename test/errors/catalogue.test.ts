import assert from 'node:assert/strict';
import fs from 'node:fs';
import { it } from 'node:test';
import { errorCatalogue } from '../../src/errors/catalogue.js';

const specCodes = {
  invalid_idempotency_key: 400,
  unauthorized: 401,
  agent_not_found: 403,
  idempotency_conflict: 409,
  rate_limit_exceeded: 429,
};

it('holds every code of the spec (section 7) with its status', () => {
  for (const [code, status] of Object.entries(specCodes)) {
    assert.equal(errorCatalogue[code as keyof typeof errorCatalogue]?.status, status, code);
  }
});

it('equals the error table of docs/api.md, code for code and status for status', () => {
  const doc = fs.readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  // The table of its Errors section: a row elsewhere in the page does not count.
  const section = /^## Errors\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(doc)?.[1];
  assert.ok(section, 'docs/api.md has an Errors section');
  const rows = [...section.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => [m[2], Number(m[1])] as const);
  assert.ok(rows.length > 0, 'its Errors section has the error table');
  const fromDoc = Object.fromEntries(rows);
  const fromCatalogue = Object.fromEntries(Object.entries(errorCatalogue).map(([code, entry]) => [code, entry.status]));
  assert.deepEqual(fromDoc, fromCatalogue);
  assert.equal(rows.length, Object.keys(errorCatalogue).length, 'no code listed twice');
});
