/** Vapi in the provider catalogue: the private key places calls, a server credential's secret signs its messages. */
import { defineProvider, headerOf, type ProviderEntry } from '../provider-entry.js';
import { createProviderHttpClient } from '../provider-http.js';
import { createVapiDirectory } from './vapi.directory.js';
import { createVapiProvider } from './vapi.provider.js';
import { parseVapiSignature, verifyVapiSignature } from './vapi.signature.js';
import { handleVapiWebhook } from './vapi.webhook.service.js';

const settings = {
  apiKey: 'VAPI_API_KEY',
  baseUrl: { name: 'VAPI_BASE_URL', default: 'https://api.vapi.ai' },
  webhookSecret: 'VAPI_WEBHOOK_SECRET',
} as const;
const workspace = { label: 'Vapi', keySetting: settings.apiKey, baseUrlSetting: settings.baseUrl.name };

export const vapiEntry: ProviderEntry<'vapi'> = defineProvider({
  name: 'vapi',
  label: workspace.label,
  docs: 'docs/providers.md#real-calls-with-vapi',
  settings,
  warnWithoutKey: false,
  agents: { providerAgentId: 'Vapi assistant id', number: 'phone-number-id' },
  createClient: ({ apiKey, baseUrl }, timeoutMs) =>
    createProviderHttpClient({ baseUrl, headers: { authorization: `Bearer ${apiKey}` }, timeoutMs }),
  createProvider: (client, { clock, reconcileAfterMs }) => createVapiProvider({ client, clock, reconcileAfterMs }),
  createDirectory: (client) => createVapiDirectory(client, workspace),
  // Server messages, `x-signature` (hex HMAC-SHA256 of `<x-timestamp>.<body>`) with the credential's secret.
  webhook: ({ webhookSecret }) => ({
    path: '/providers/vapi/webhook',
    notConfigured: webhookSecret ? undefined : `Vapi webhooks are not configured on this server (${settings.webhookSecret} is not set).`,
    checkHeaders: (request, nowMs) => {
      const parsed = parseVapiSignature(headerOf(request, 'x-signature'), headerOf(request, 'x-timestamp'), nowMs);
      return 'refusal' in parsed ? parsed.refusal : undefined;
    },
    verify: (request, raw, nowMs) =>
      verifyVapiSignature(webhookSecret ?? '', headerOf(request, 'x-signature'), headerOf(request, 'x-timestamp'), raw, nowMs),
    handle: handleVapiWebhook,
  }),
});
