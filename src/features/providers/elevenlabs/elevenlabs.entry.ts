/** ElevenLabs Agents in the provider catalogue: the first real provider, and the only one whose agent ids are callgate's. */
import { defineProvider, headerOf, type ProviderEntry } from '../provider-entry.js';
import { createProviderHttpClient } from '../provider-http.js';
import { createElevenLabsDirectory } from './elevenlabs.directory.js';
import { createElevenLabsProvider, elevenLabsCannotCancel } from './elevenlabs.provider.js';
import { parseSignatureHeader, verifyElevenLabsSignature, type SignatureFailure } from './elevenlabs.signature.js';
import { handleElevenLabsWebhook } from './elevenlabs.webhook.service.js';

const settings = {
  apiKey: 'ELEVENLABS_API_KEY',
  baseUrl: { name: 'ELEVENLABS_BASE_URL', default: 'https://api.elevenlabs.io' },
  webhookSecret: 'ELEVENLABS_WEBHOOK_SECRET',
} as const;
const workspace = { label: 'ElevenLabs', keySetting: settings.apiKey, baseUrlSetting: settings.baseUrl.name };
const signatureHeader = 'elevenlabs-signature';

const refusals: Record<SignatureFailure, string> = {
  missing: 'The ElevenLabs-Signature header is missing.',
  malformed: 'The ElevenLabs-Signature header is invalid.',
  mismatch: 'The ElevenLabs-Signature header is invalid.',
  stale: 'The ElevenLabs-Signature header is too old (more than 30 minutes).',
  future: "The ElevenLabs-Signature timestamp is more than 30 minutes ahead of this server's clock.",
};

export const elevenlabsEntry: ProviderEntry<'elevenlabs'> = defineProvider({
  name: 'elevenlabs',
  label: workspace.label,
  docs: 'docs/providers.md#real-calls-with-elevenlabs-agents',
  settings,
  warnWithoutKey: true,
  // Their agent ids look like `agent_…`, so callgate's agent_id is theirs; the number is their phone number id.
  agents: { providerAgentId: undefined, number: 'phone-number-id' },
  cannotCancel: elevenLabsCannotCancel,
  createClient: ({ apiKey, baseUrl }, timeoutMs) => createProviderHttpClient({ baseUrl, headers: { 'xi-api-key': apiKey }, timeoutMs }),
  createProvider: (client, { clock, reconcileAfterMs }) => createElevenLabsProvider({ client, clock, reconcileAfterMs }),
  createDirectory: (client) => createElevenLabsDirectory(client, workspace),
  // Post-call webhooks, `ElevenLabs-Signature: t=<s>,v0=<hex>` with the workspace's webhook secret.
  webhook: ({ webhookSecret }) => ({
    path: '/providers/elevenlabs/webhook',
    notConfigured: webhookSecret
      ? undefined
      : `ElevenLabs webhooks are not configured on this server (${settings.webhookSecret} is not set).`,
    checkHeaders: (request, nowMs) => {
      const parsed = parseSignatureHeader(headerOf(request, signatureHeader), nowMs);
      return 'failure' in parsed ? refusals[parsed.failure] : undefined;
    },
    verify: (request, raw, nowMs) => {
      const check = verifyElevenLabsSignature(webhookSecret ?? '', headerOf(request, signatureHeader), raw, nowMs);
      return check.ok ? undefined : refusals[check.reason];
    },
    handle: handleElevenLabsWebhook,
  }),
});
