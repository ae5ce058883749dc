/**
 * The provider catalogue is complete: every entry is one folder of src/features/providers named after it,
 * documents each of its settings in docs/configuration.md and has its section in docs/providers.md, and its
 * webhook route answers at its path on both databases (refusing what is unsigned, or saying what is not
 * configured). No file outside the providers' folder names a provider: they all read the catalogue. Every
 * entry has its contract fake, which the shared contract suite (provider-contract.test.ts) runs it against.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { providerCatalogue, realProviders } from '../../src/features/providers/provider-catalogue.js';
import { contractFakes } from '../support/contract-fakes/index.js';
import { forEachDialect } from '../support/dialects.js';
import { anchorsOf } from '../support/markdown.js';
import { repoRoot } from '../support/repo-root.js';
import { appFor } from '../support/test-app.js';

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const settingsOf = (entry: (typeof providerCatalogue)[number]) =>
  [entry.settings.apiKey, entry.settings.baseUrl.name, entry.settings.webhookSecret].filter((name) => name !== undefined);

/** Every variable the settings table of docs/configuration.md documents (its first column). */
function documentedSettings(): Set<string> {
  return new Set([...read('docs/configuration.md').matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((match) => match[1]!));
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(relative);
    return entry.name.endsWith('.ts') ? [relative] : [];
  });
}

describe('the provider catalogue', () => {
  it('lists each provider once, each in a folder of its own named after it', () => {
    assert.equal(new Set(realProviders).size, providerCatalogue.length);
    for (const entry of providerCatalogue) {
      assert.match(
        entry.name,
        /^[a-z][a-z0-9]*$/,
        'a provider name is lower-case letters and digits (it is a path segment and a CLI value)',
      );
      const file = `src/features/providers/${entry.name}/${entry.name}.entry.ts`;
      assert.ok(fs.existsSync(path.join(repoRoot, file)), `${entry.name}: its entry lives in ${file}`);
      assert.equal(entry.webhook({ apiKey: 'k', baseUrl: 'https://x', webhookSecret: 's' }).path, `/providers/${entry.name}/webhook`);
      assert.match(entry.settings.apiKey, new RegExp(`^${entry.name.toUpperCase()}_`), 'its settings carry its name');
    }
  });

  it('documents every setting of every entry in docs/configuration.md', () => {
    const documented = documentedSettings();
    for (const entry of providerCatalogue) {
      for (const setting of settingsOf(entry)) {
        assert.ok(documented.has(setting), `${entry.name}: ${setting} has no row in docs/configuration.md`);
      }
    }
  });

  it('gives every entry its section of docs/providers.md', () => {
    const anchors = anchorsOf(read('docs/providers.md'));
    for (const entry of providerCatalogue) {
      const anchor = entry.docs.split('#')[1]!;
      assert.ok(anchors.has(anchor), `${entry.name}: docs/providers.md has no heading #${anchor}`);
    }
  });

  it('gives every entry its contract fake in test/support/contract-fakes/, and no other provider one', () => {
    // The type of contractFakes says the same; this is its twin when the check is run alone.
    assert.deepEqual(Object.keys(contractFakes).sort(), [...realProviders].sort());
    for (const entry of providerCatalogue) {
      const file = `test/support/contract-fakes/${entry.name}.ts`;
      assert.ok(fs.existsSync(path.join(repoRoot, file)), `${entry.name}: its contract fake lives in ${file}`);
    }
  });

  it('leaves no provider named outside the providers folder (migrations aside): everything else reads the catalogue', () => {
    const names = realProviders.map((name) => `'${name}'`);
    const offenders = sourceFiles('src')
      .filter((file) => !file.startsWith('src/features/providers/') && !file.startsWith('src/db/migrations/'))
      .flatMap((file) =>
        read(file)
          .split('\n')
          .flatMap((line, index) => (names.some((name) => line.includes(name)) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
      );
    assert.deepEqual(offenders, []);
  });
});

forEachDialect('every catalogue entry has a working webhook route', (dialect) => {
  describe('configured: an unsigned request is refused', () => {
    const env = Object.fromEntries(
      providerCatalogue.flatMap((entry) =>
        settingsOf(entry)
          .filter((name) => !name.endsWith('_BASE_URL'))
          .map((name) => [name, 'secret']),
      ),
    );
    const t = appFor(dialect, { env });
    for (const entry of providerCatalogue) {
      it(`${entry.name}: POST to its webhook without a signature → 401; GET → 405`, async () => {
        const { path: route } = entry.webhook(t.services.config.providers[entry.name]);
        const unsigned = await t.inject({
          method: 'POST',
          url: route,
          payload: { call: {} },
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(unsigned.statusCode, 401, unsigned.body);
        assert.equal(unsigned.json().error, 'unauthorized');
        assert.equal((await t.inject({ method: 'GET', url: route })).statusCode, 405);
      });
    }
  });

  describe('not configured: the route says which setting is missing', () => {
    const t = appFor(dialect);
    for (const entry of providerCatalogue) {
      it(`${entry.name}: 503 provider_unavailable naming its secret`, async () => {
        const { path: route } = entry.webhook(t.services.config.providers[entry.name]);
        const response = await t.inject({ method: 'POST', url: route, payload: {}, headers: { 'content-type': 'application/json' } });
        assert.equal(response.statusCode, 503, response.body);
        assert.equal(response.json().error, 'provider_unavailable');
        assert.match(response.json().message, new RegExp(entry.settings.webhookSecret ?? entry.settings.apiKey));
      });
    }
  });
});
