/**
 * What a provider needs from the server's settings before it can place calls or list agents. The one place
 * that knows ElevenLabs, Retell and Vapi each need their API key: the API, the portal, the CLI and start-up
 * ask here and each word the answer for its own reader.
 */
import type { Config } from '../../config.js';
import type { AgentProvider } from '../agents/agents.tables.js';
import { createElevenLabsClient, type ElevenLabsClient } from './elevenlabs/elevenlabs.client.js';
import { createElevenLabsDirectory } from './elevenlabs/elevenlabs.directory.js';
import { createProviderHttpClient, type ProviderHttpClient } from './provider-http.js';
import type { AgentDirectory } from './provider.interface.js';
import { createRetellDirectory } from './retell/retell.directory.js';
import { createVapiDirectory } from './vapi/vapi.directory.js';

export type ProviderSettings = Pick<Config, 'elevenlabs' | 'retell' | 'vapi' | 'providerTimeoutMs'>;
type KeySettings = Pick<Config, 'elevenlabs' | 'retell' | 'vapi'>;

/** The providers that place real calls, in the order the CLI, the portal and doctor list them. */
export const realProviders = ['elevenlabs', 'retell', 'vapi'] as const satisfies readonly AgentProvider[];
export type RealProvider = (typeof realProviders)[number];

/** The provider's name as people write it. */
export const providerLabels: Readonly<Record<AgentProvider, string>> = {
  simulator: 'the simulator',
  elevenlabs: 'ElevenLabs',
  retell: 'Retell',
  vapi: 'Vapi',
};

/** The setting that holds the ElevenLabs API key. */
export const elevenLabsKeySetting = 'ELEVENLABS_API_KEY';
export const retellKeySetting = 'RETELL_API_KEY';
export const vapiKeySetting = 'VAPI_API_KEY';

/** The setting each real provider cannot work without (the simulator needs none). */
export const requiredSettings: Readonly<Record<RealProvider, string>> = {
  elevenlabs: elevenLabsKeySetting,
  retell: retellKeySetting,
  vapi: vapiKeySetting,
};

/** The setting of each real provider's API base URL. */
export const baseUrlSettings: Readonly<Record<RealProvider, string>> = {
  elevenlabs: 'ELEVENLABS_BASE_URL',
  retell: 'RETELL_BASE_URL',
  vapi: 'VAPI_BASE_URL',
};

export function isRealProvider(provider: AgentProvider): provider is RealProvider {
  return provider !== 'simulator';
}

/** The setting `provider` lacks on this server, or undefined when it can place calls. */
export function missingSetting(provider: AgentProvider, config: KeySettings): string | undefined {
  if (!isRealProvider(provider)) return undefined;
  return config[provider].apiKey ? undefined : requiredSettings[provider];
}

/** The ElevenLabs API client of this server; undefined without the key, as `missingSetting` says. */
export function elevenLabsClientFor(config: ProviderSettings): ElevenLabsClient | undefined {
  const { apiKey, baseUrl } = config.elevenlabs;
  return apiKey ? createElevenLabsClient({ apiKey, baseUrl, timeoutMs: config.providerTimeoutMs }) : undefined;
}

/** The Retell API client of this server (Bearer auth); undefined without the key. */
export function retellClientFor(config: ProviderSettings): ProviderHttpClient | undefined {
  const { apiKey, baseUrl } = config.retell;
  return apiKey
    ? createProviderHttpClient({ baseUrl, headers: { authorization: `Bearer ${apiKey}` }, timeoutMs: config.providerTimeoutMs })
    : undefined;
}

/** The Vapi API client of this server (Bearer auth with the private key); undefined without the key. */
export function vapiClientFor(config: ProviderSettings): ProviderHttpClient | undefined {
  const { apiKey, baseUrl } = config.vapi;
  return apiKey
    ? createProviderHttpClient({ baseUrl, headers: { authorization: `Bearer ${apiKey}` }, timeoutMs: config.providerTimeoutMs })
    : undefined;
}

/** The workspace of `provider` (its agents and numbers, for agents sync and doctor); undefined when not configured. */
export function agentDirectoryFor(provider: RealProvider, config: ProviderSettings): AgentDirectory | undefined {
  switch (provider) {
    case 'elevenlabs': {
      const client = elevenLabsClientFor(config);
      return client && createElevenLabsDirectory(client);
    }
    case 'retell': {
      const client = retellClientFor(config);
      return client && createRetellDirectory(client);
    }
    case 'vapi': {
      const client = vapiClientFor(config);
      return client && createVapiDirectory(client);
    }
  }
}

/** Every configured provider's workspace, in the order of `realProviders`. */
export function agentDirectoriesFor(config: ProviderSettings): Map<RealProvider, AgentDirectory> {
  return new Map(
    realProviders.flatMap((provider) => {
      const directory = agentDirectoryFor(provider, config);
      return directory ? [[provider, directory] as const] : [];
    }),
  );
}
