/**
 * The settings of Retell and Vapi (defaults, validation, "not configured"), ElevenLabs' own voicemail
 * detection as a `voicemail` outcome, and the webhooks of a provider whose secret is not set.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';
import { completedOutcome } from '../../src/features/providers/elevenlabs/elevenlabs.mapping.js';
import { missingSetting } from '../../src/features/providers/provider-catalogue.js';
import { forEachDialect } from '../support/dialects.js';
import { transcriptionEvent } from '../support/elevenlabs-fixtures.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

it('RETELL_* and VAPI_* settings: defaults, trailing slashes dropped, a base URL without http(s) refused, a missing key named', () => {
  const defaults = loadConfig({});
  assert.deepEqual(defaults.providers.retell, { apiKey: undefined, baseUrl: 'https://api.retellai.com', webhookSecret: undefined });
  assert.deepEqual(defaults.providers.vapi, { apiKey: undefined, webhookSecret: undefined, baseUrl: 'https://api.vapi.ai' });
  assert.equal(missingSetting('retell', defaults), 'RETELL_API_KEY');
  assert.equal(missingSetting('vapi', defaults), 'VAPI_API_KEY');
  assert.equal(missingSetting('simulator', defaults), undefined);
  const set = loadConfig({ RETELL_API_KEY: ' key ', RETELL_BASE_URL: 'http://127.0.0.1:9/', VAPI_API_KEY: 'v', VAPI_WEBHOOK_SECRET: 's' });
  assert.deepEqual(set.providers.retell, { apiKey: 'key', baseUrl: 'http://127.0.0.1:9', webhookSecret: undefined });
  assert.equal(set.providers.vapi.webhookSecret, 's');
  assert.equal(missingSetting('retell', set), undefined);
  for (const name of ['RETELL_BASE_URL', 'VAPI_BASE_URL']) {
    assert.throws(
      () => loadConfig({ [name]: 'api.example.com' }),
      (error: Error) => error instanceof ConfigError && error.message.startsWith(name),
    );
  }
});

it("ElevenLabs' voicemail detection (its system tool, or the termination reason) ends a conversation as failed with voicemail", () => {
  const now = new Date();
  const startSecs = Math.floor(now.getTime() / 1000) - 60;
  const plain = (transcriptionEvent('conv_1', { startSecs, durationSecs: 20, summary: 'Voicemail.' }).data ?? {}) as Record<string, any>;
  assert.equal(completedOutcome(plain, now).status, 'completed');
  const byTool = structuredClone(plain);
  byTool.transcript.push({
    role: 'agent',
    message: null,
    time_in_call_secs: 9,
    tool_calls: [{ type: 'system', tool_name: 'voicemail_detection', params_as_json: '{"reason":"beep"}' }],
  });
  const byReason = structuredClone(plain);
  byReason.metadata.termination_reason = 'voicemail_detection tool was called.';
  for (const conversation of [byTool, byReason]) {
    const outcome = completedOutcome(conversation, now);
    assert.equal(outcome.status, 'failed');
    assert.equal(outcome.status === 'failed' && outcome.reason, 'voicemail');
    assert.equal(outcome.status === 'failed' && outcome.failedAt.getTime(), (startSecs + 20) * 1000);
  }
});

await forEachDialect('Provider webhooks of a server without their secret', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t?.close());

  it('Retell without RETELL_API_KEY and Vapi without VAPI_WEBHOOK_SECRET answer 503 provider_unavailable naming the setting', async () => {
    for (const [url, setting] of [
      ['/providers/retell/webhook', 'RETELL_API_KEY'],
      ['/providers/vapi/webhook', 'VAPI_WEBHOOK_SECRET'],
    ] as const) {
      const res = await t.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: '{}' });
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().error, 'provider_unavailable');
      assert.match(res.json().message, new RegExp(setting));
      const get = await t.inject({ method: 'GET', url });
      assert.equal(get.statusCode, 405);
    }
  });
});
