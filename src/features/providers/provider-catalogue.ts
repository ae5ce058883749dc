/**
 * The one list of voice providers. Each real provider's folder exports its entry (`<name>.entry.ts`, see
 * provider-entry.ts); everything that varies by provider reads it here: config (its settings), the container
 * (clients, call adapters, agent directories), the app (its signed webhook route), the server's start-up
 * notes, the CLI's `agents add` / `agents sync`, doctor and the portal. The type of a provider's name comes
 * from this list. test/providers/provider-catalogue.test.ts proves every entry complete.
 */
import type { ProviderHttpClient } from './provider-http.js';
import type { ProviderContext, ProviderEntry, ProviderSettingValues } from './provider-entry.js';
import type { AgentDirectory, VoiceProvider } from './provider.interface.js';
import { elevenlabsEntry } from './elevenlabs/elevenlabs.entry.js';
import { retellEntry } from './retell/retell.entry.js';
import { vapiEntry } from './vapi/vapi.entry.js';

/** The providers that place real calls, in the order the CLI, the portal and doctor list them. */
export const providerCatalogue = [elevenlabsEntry, retellEntry, vapiEntry] as const;

export type RealProvider = (typeof providerCatalogue)[number]['name'];
/** Every provider an agent may have: the built-in simulator (no settings, never a real call) and the catalogue's. */
export type AgentProvider = 'simulator' | RealProvider;

export const realProviders: readonly RealProvider[] = providerCatalogue.map((entry) => entry.name);
export const agentProviders: readonly AgentProvider[] = ['simulator', ...realProviders];

/** Each real provider's settings as config.ts read them. */
export type ProviderSettingsByName = Readonly<Record<RealProvider, ProviderSettingValues>>;
/** What the catalogue's functions need of the config. */
export interface ProviderConfig {
  readonly providers: ProviderSettingsByName;
  readonly providerTimeoutMs: number;
}

export function isRealProvider(provider: AgentProvider): provider is RealProvider {
  return provider !== 'simulator';
}

export function providerEntry(provider: RealProvider): ProviderEntry<RealProvider> {
  const entry = providerCatalogue.find((candidate) => candidate.name === provider);
  if (!entry) throw new Error(`no provider ${provider} in the catalogue`);
  return entry;
}

/** The provider's name as people write it. */
export function providerLabel(provider: AgentProvider): string {
  return isRealProvider(provider) ? providerEntry(provider).label : 'the simulator';
}

/** The setting `provider` lacks on this server, or undefined when it can place calls (the simulator always can). */
export function missingSetting(provider: AgentProvider, config: Pick<ProviderConfig, 'providers'>): string | undefined {
  if (!isRealProvider(provider)) return undefined;
  return config.providers[provider].apiKey ? undefined : providerEntry(provider).settings.apiKey;
}

/** The API client of `provider` on this server; undefined without its key, as `missingSetting` says. */
export function providerClientFor(provider: RealProvider, config: ProviderConfig): ProviderHttpClient | undefined {
  const { apiKey, baseUrl } = config.providers[provider];
  return apiKey ? providerEntry(provider).createClient({ apiKey, baseUrl }, config.providerTimeoutMs) : undefined;
}

/** The workspace of `provider` (its agents and numbers, for agents sync and doctor); undefined when not configured. */
export function agentDirectoryFor(provider: RealProvider, config: ProviderConfig): AgentDirectory | undefined {
  const client = providerClientFor(provider, config);
  return client && providerEntry(provider).createDirectory(client);
}

/** Every configured provider's workspace, in the catalogue's order. */
export function agentDirectoriesFor(config: ProviderConfig): Map<RealProvider, AgentDirectory> {
  return new Map(
    realProviders.flatMap((provider) => {
      const directory = agentDirectoryFor(provider, config);
      return directory ? [[provider, directory] as const] : [];
    }),
  );
}

/** The call adapter of every provider whose key the server has (the registry stands in for the others). */
export function voiceProvidersFor(config: ProviderConfig, context: ProviderContext): Partial<Record<RealProvider, VoiceProvider>> {
  return Object.fromEntries(
    realProviders.flatMap((provider) => {
      const client = providerClientFor(provider, config);
      return client ? [[provider, providerEntry(provider).createProvider(client, context)] as const] : [];
    }),
  );
}

/** What a missing setting of `provider` means on this server, for doctor and the start-up notes. */
export function withoutKeyNote(provider: RealProvider, config: Pick<ProviderConfig, 'providers'>): string {
  const noneConfigured = realProviders.every((name) => !config.providers[name].apiKey);
  const entry = providerEntry(provider);
  return `${entry.settings.apiKey} is not set: ${
    entry.warnWithoutKey && noneConfigured ? 'only simulated calls can be placed' : `agents of provider ${provider} are refused`
  }`;
}

export interface SettingNote {
  readonly level: 'warn' | 'info';
  readonly message: string;
}

/**
 * What the server says at start of each provider's settings: a missing key (warned for the providers that
 * place real calls out of the box, said at info level for the opt-in ones), and a key without the secret
 * its webhooks are signed with (outcomes then come from looking the calls up only).
 */
export function providerSettingNotes(config: Pick<ProviderConfig, 'providers'>): SettingNote[] {
  return providerCatalogue.flatMap((entry): SettingNote[] => {
    const values = config.providers[entry.name];
    if (!values.apiKey) return [{ level: entry.warnWithoutKey ? 'warn' : 'info', message: withoutKeyNote(entry.name, config) }];
    const secret = entry.settings.webhookSecret;
    if (secret && !values.webhookSecret) {
      return [
        {
          level: 'warn',
          message: `${secret} is not set: ${entry.label} webhooks are refused; outcomes come from reconciliation only`,
        },
      ];
    }
    return [];
  });
}
