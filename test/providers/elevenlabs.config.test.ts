/**
 * The ElevenLabs settings as src/config.ts reads them (issue 4's defaults), and the agent rule they make:
 * without ELEVENLABS_API_KEY, agents of provider elevenlabs are refused naming the setting.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { agentPolicyFor } from '../../src/features/agents/agents.service.js';

describe('ElevenLabs configuration', () => {
  it('defaults: no key or secret, the public API, a 10 s provider timeout, reconciliation after 15 minutes', () => {
    const config = loadConfig({});
    assert.deepEqual(
      { ...config.providers.elevenlabs },
      { apiKey: undefined, webhookSecret: undefined, baseUrl: 'https://api.elevenlabs.io' },
    );
    assert.equal(config.providerTimeoutMs, 10_000);
    assert.equal(config.reconcileAfterMs, 15 * 60_000);
    assert.ok(Object.isFrozen(config.providers.elevenlabs));
  });

  it('reads the settings; blank values count as unset; a trailing slash of the base URL is dropped', () => {
    const config = loadConfig({
      ELEVENLABS_API_KEY: ' sk_abc ',
      ELEVENLABS_WEBHOOK_SECRET: '   ',
      ELEVENLABS_BASE_URL: 'https://api.eu.residency.elevenlabs.io/',
      CALLGATE_PROVIDER_TIMEOUT_MS: '2500',
      CALLGATE_RECONCILE_AFTER: '90s',
    });
    assert.deepEqual(
      { ...config.providers.elevenlabs },
      { apiKey: 'sk_abc', webhookSecret: undefined, baseUrl: 'https://api.eu.residency.elevenlabs.io' },
    );
    assert.equal(config.providerTimeoutMs, 2_500);
    assert.equal(config.reconcileAfterMs, 90_000);
  });

  it('a wrong value stops start-up with a message naming the variable', () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ ELEVENLABS_BASE_URL: 'api.elevenlabs.io' }, /^ELEVENLABS_BASE_URL must start with https:\/\//],
      [{ CALLGATE_PROVIDER_TIMEOUT_MS: 'ten' }, /^CALLGATE_PROVIDER_TIMEOUT_MS must be a whole number/],
      [{ CALLGATE_RECONCILE_AFTER: 'soon' }, /^CALLGATE_RECONCILE_AFTER: /],
      // The idempotency lock must outlast a provider request, or a retry could dial while the first still does.
      [{ CALLGATE_PROVIDER_TIMEOUT_MS: '60000' }, /CALLGATE_IDEMPOTENCY_LOCK_MS must be longer than CALLGATE_PROVIDER_TIMEOUT_MS/],
    ];
    for (const [env, message] of cases) {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && message.test(error.message),
        JSON.stringify(env),
      );
    }
  });

  it('without an API key, the elevenlabs provider is unavailable for new agents, naming ELEVENLABS_API_KEY (as Retell and Vapi without theirs)', () => {
    assert.deepEqual(
      [...agentPolicyFor(loadConfig({})).unavailableProviders],
      [
        ['elevenlabs', 'ELEVENLABS_API_KEY'],
        ['retell', 'RETELL_API_KEY'],
        ['vapi', 'VAPI_API_KEY'],
      ],
    );
    assert.deepEqual(
      [...agentPolicyFor(loadConfig({ ELEVENLABS_API_KEY: 'sk_abc' })).unavailableProviders],
      [
        ['retell', 'RETELL_API_KEY'],
        ['vapi', 'VAPI_API_KEY'],
      ],
    );
    assert.deepEqual(
      [...agentPolicyFor(loadConfig({ ELEVENLABS_API_KEY: 'a', RETELL_API_KEY: 'b', VAPI_API_KEY: 'c' })).unavailableProviders],
      [],
    );
  });
});
