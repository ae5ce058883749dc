import { err } from '../../lib/result.js';
import type { Clock } from '../../lib/clock.js';
import { isRealProvider, providerEntry, voiceProvidersFor, type AgentProvider, type ProviderConfig } from './provider-catalogue.js';
import { createSimulatorProvider } from './simulator.provider.js';
import type { AgentRow } from '../agents/agents.tables.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { CannotCancel, VoiceProvider } from './provider.interface.js';

/** Picks the provider of a call. Test-mode keys always get the simulator: they never place real calls. */
export interface ProviderRegistry {
  forCall(agent: AgentRow, mode: ApiKeyMode): VoiceProvider;
  byName(name: AgentProvider): VoiceProvider;
}

function cannotCancelOf(name: AgentProvider): CannotCancel | undefined {
  const reason = isRealProvider(name) ? providerEntry(name).cannotCancel : undefined;
  return reason === undefined ? undefined : { reason };
}

/** Stands in for a provider that is not configured on this server, so calls through it fail clearly. */
export function unconfiguredProvider(name: AgentProvider, missingSetting: string): VoiceProvider {
  const failure = {
    kind: 'unavailable' as const,
    message: `The ${name} provider is not configured on this server (${missingSetting} is not set).`,
    retryable: true as const,
  };
  return {
    name,
    firstCheckDelayMs: 60_000,
    placeCall: async () => err(failure),
    checkCall: async () => err(failure),
    findDial: async () => err(failure),
    fetchRecording: async () => err(failure),
    // A provider that cannot end calls says so, configured or not; the others cannot be asked now.
    cancel: cannotCancelOf(name) ?? (async () => err(failure)),
  };
}

export function createProviderRegistry(
  providers: Partial<Record<AgentProvider, VoiceProvider>> & { simulator: VoiceProvider },
): ProviderRegistry {
  const byName = (name: AgentProvider): VoiceProvider =>
    providers[name] ?? unconfiguredProvider(name, isRealProvider(name) ? providerEntry(name).settings.apiKey : name);
  return {
    byName,
    forCall: (agent, mode) => (mode === 'test' ? providers.simulator : byName(agent.provider)),
  };
}

/** The registry of the configured providers beside the simulator: the server's, and the CLI's for `calls cancel`. */
export function providerRegistryFor(
  config: ProviderConfig & { readonly simulatorDelayMs: number; readonly reconcileAfterMs: number },
  clock: Clock,
): ProviderRegistry {
  return createProviderRegistry({
    simulator: createSimulatorProvider({ clock, delayMs: config.simulatorDelayMs }),
    ...voiceProvidersFor(config, { clock, reconcileAfterMs: config.reconcileAfterMs }),
  });
}
