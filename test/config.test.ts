/** The configuration module on its own: how CALLGATE_ROLES, the HTTP server timeouts, HSTS and the dial search window are read. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, withDotEnv } from '../src/config.js';

describe('CALLGATE_ROLES', () => {
  const roles = (value: string | undefined) => [...loadConfig(value === undefined ? {} : { CALLGATE_ROLES: value }).roles].sort();

  it('runs both roles by default, for api,worker in any order, and for "both"', () => {
    for (const value of [undefined, '', 'api,worker', 'worker, api', 'both']) {
      assert.deepEqual(roles(value), ['api', 'worker'], String(value));
    }
  });

  it('runs one role when told', () => {
    assert.deepEqual(roles('api'), ['api']);
    assert.deepEqual(roles('worker'), ['worker']);
  });

  it('refuses anything else, naming the setting and the values it takes', () => {
    for (const value of ['all', 'api,web', ',', 'both,api']) {
      assert.throws(() => roles(value), /CALLGATE_ROLES must be api, worker, api,worker or both, got/, value);
    }
  });
});

describe('HTTP server timeouts and HSTS', () => {
  it('has deliberate defaults: headers within 10 s, the request within 30 s, idle keep-alive 65 s', () => {
    const config = loadConfig({});
    assert.equal(config.headersTimeoutMs, 10_000);
    assert.equal(config.requestTimeoutMs, 30_000);
    assert.equal(config.keepAliveTimeoutMs, 65_000);
  });

  it('refuses a headers timeout longer than the request timeout, naming both', () => {
    assert.throws(
      () => loadConfig({ CALLGATE_HEADERS_TIMEOUT_MS: '20000', CALLGATE_REQUEST_TIMEOUT_MS: '10000' }),
      /CALLGATE_HEADERS_TIMEOUT_MS must not be longer than CALLGATE_REQUEST_TIMEOUT_MS/,
    );
  });

  it('sends Strict-Transport-Security only for an https public URL and a max-age above 0', () => {
    assert.equal(loadConfig({}).strictTransportSecurity, undefined);
    assert.equal(loadConfig({ CALLGATE_PUBLIC_URL: 'https://callgate.example.com' }).strictTransportSecurity, 'max-age=31536000');
    assert.equal(
      loadConfig({ CALLGATE_PUBLIC_URL: 'https://callgate.example.com', CALLGATE_HSTS_MAX_AGE: '0' }).strictTransportSecurity,
      undefined,
    );
    assert.throws(() => loadConfig({ CALLGATE_HSTS_MAX_AGE: '1y' }), /CALLGATE_HSTS_MAX_AGE must be a whole number/);
  });
});

describe('CALLGATE_DIAL_SEARCH_WINDOW', () => {
  it('is 2 minutes by default and takes any duration from 1 s that is longer than the provider timeout', () => {
    assert.equal(loadConfig({}).dialSearchWindowMs, 120_000);
    assert.equal(loadConfig({ CALLGATE_DIAL_SEARCH_WINDOW: '2500ms', CALLGATE_PROVIDER_TIMEOUT_MS: '2000' }).dialSearchWindowMs, 2_500);
  });

  it('refuses a window that ends by the provider timeout, naming both', () => {
    assert.throws(
      () => loadConfig({ CALLGATE_DIAL_SEARCH_WINDOW: '10s' }),
      /CALLGATE_DIAL_SEARCH_WINDOW \(10000 ms\) must be longer than CALLGATE_PROVIDER_TIMEOUT_MS \(10000 ms\)/,
    );
    assert.throws(() => loadConfig({ CALLGATE_DIAL_SEARCH_WINDOW: '500ms', CALLGATE_PROVIDER_TIMEOUT_MS: '200' }), /between 1s and 24h/);
    assert.throws(() => loadConfig({ CALLGATE_DIAL_SEARCH_WINDOW: '25h' }), /between 1s and 24h/);
  });
});

describe('.env in the working directory (withDotEnv)', () => {
  const dirWith = (text: string | null) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-dotenv-'));
    if (text !== null) fs.writeFileSync(path.join(dir, '.env'), text);
    return dir;
  };

  it("adds the file's settings beneath the environment: a variable set for real wins, comments and quotes as dotenv reads them", () => {
    const dir = dirWith(
      '# local work\nDATABASE_URL=postgres://from-file/db\nCALLGATE_WEBHOOK_ALLOW_PRIVATE=true\nCALLGATE_PUBLIC_URL="http://127.0.0.1:3000"\n',
    );
    try {
      const env = withDotEnv({ DATABASE_URL: 'postgres://from-env/db', PATH: '/bin' }, dir);
      assert.equal(env.DATABASE_URL, 'postgres://from-env/db');
      assert.equal(env.CALLGATE_WEBHOOK_ALLOW_PRIVATE, 'true');
      assert.equal(env.CALLGATE_PUBLIC_URL, 'http://127.0.0.1:3000');
      assert.equal(env.PATH, '/bin');
      assert.equal(loadConfig(env).webhookAllowPrivate, true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('no .env is the environment as it is; an unreadable one is a ConfigError naming the file, never its contents', () => {
    const empty = dirWith(null);
    const unreadable = dirWith(null);
    try {
      const env = { PORT: '4000' };
      assert.deepEqual(withDotEnv(env, empty), env);
      // A folder where the file should be cannot be read as one (root reads any file, whatever its mode).
      fs.mkdirSync(path.join(unreadable, '.env'));
      assert.throws(
        () => withDotEnv({}, unreadable),
        (error: unknown) => error instanceof ConfigError && error.message.includes(path.join(unreadable, '.env')),
      );
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
      fs.rmSync(unreadable, { recursive: true, force: true });
    }
  });
});
