/** Retell AI in the provider catalogue: its webhooks are signed with the API key itself. */
import { defineProvider, headerOf, type ProviderEntry } from '../provider-entry.js';
import { createProviderHttpClient } from '../provider-http.js';
import { createRetellDirectory } from './retell.directory.js';
import { createRetellProvider } from './retell.provider.js';
import { parseRetellSignature, verifyRetellSignature } from './retell.signature.js';
import { handleRetellWebhook } from './retell.webhook.service.js';

const settings = {
  apiKey: 'RETELL_API_KEY',
  baseUrl: { name: 'RETELL_BASE_URL', default: 'https://api.retellai.com' },
} as const;
const workspace = { label: 'Retell', keySetting: settings.apiKey, baseUrlSetting: settings.baseUrl.name };
const signatureHeader = 'x-retell-signature';

export const retellEntry: ProviderEntry<'retell'> = defineProvider({
  name: 'retell',
  label: workspace.label,
  docs: 'docs/providers.md#real-calls-with-retell-ai',
  settings,
  warnWithoutKey: false,
  // A Retell number is known by the number itself: it is its id there.
  agents: { providerAgentId: 'Retell agent id', number: 'from-number' },
  createClient: ({ apiKey, baseUrl }, timeoutMs) =>
    createProviderHttpClient({ baseUrl, headers: { authorization: `Bearer ${apiKey}` }, timeoutMs }),
  createProvider: (client, { clock, reconcileAfterMs }) => createRetellProvider({ client, clock, reconcileAfterMs }),
  createDirectory: (client) => createRetellDirectory(client, workspace),
  // `x-retell-signature: v=<ms>,d=<hex>`, keyed with the API key (any key of the workspace with the webhook badge).
  webhook: ({ apiKey }) => ({
    path: '/providers/retell/webhook',
    notConfigured: apiKey ? undefined : `Retell webhooks are not configured on this server (${settings.apiKey} is not set).`,
    checkHeaders: (request, nowMs) => {
      const parsed = parseRetellSignature(headerOf(request, signatureHeader), nowMs);
      return 'refusal' in parsed ? parsed.refusal : undefined;
    },
    verify: (request, raw, nowMs) => verifyRetellSignature(apiKey ?? '', headerOf(request, signatureHeader), raw, nowMs),
    handle: handleRetellWebhook,
  }),
});
