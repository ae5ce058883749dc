/**
 * What a provider needs from the server's settings before it can place calls or list agents. The one place
 * that knows ElevenLabs needs its API key: the API, the portal, the CLI and start-up ask here and each word
 * the answer for its own reader.
 */
import type { Config } from '../../config.js';
import type { AgentProvider } from '../agents/agents.tables.js';
import { createElevenLabsClient, type ElevenLabsClient } from './elevenlabs/elevenlabs.client.js';

export type ProviderSettings = Pick<Config, 'elevenlabs' | 'providerTimeoutMs'>;

/** The setting that holds the ElevenLabs API key. */
export const elevenLabsKeySetting = 'ELEVENLABS_API_KEY';

/** The setting each real provider cannot work without (the simulator needs none). */
export const requiredSettings: Readonly<Partial<Record<AgentProvider, string>>> = { elevenlabs: elevenLabsKeySetting };

/** The setting `provider` lacks on this server, or undefined when it can place calls. */
export function missingSetting(provider: AgentProvider, config: Pick<Config, 'elevenlabs'>): string | undefined {
  return provider === 'elevenlabs' && !config.elevenlabs.apiKey ? elevenLabsKeySetting : undefined;
}

/** The ElevenLabs API client of this server; undefined without the key, as `missingSetting` says. */
export function elevenLabsClientFor(config: ProviderSettings): ElevenLabsClient | undefined {
  const { apiKey, baseUrl } = config.elevenlabs;
  return apiKey ? createElevenLabsClient({ apiKey, baseUrl, timeoutMs: config.providerTimeoutMs }) : undefined;
}
