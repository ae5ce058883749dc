/**
 * Measures the voice providers from outside: the container wraps the provider registry, so every request
 * to a provider (POST /v1/calls, the batch dialer, the call monitor) is timed and its failures counted by
 * kind, without a line in the adapters. A call placed is counted here too, by provider and outcome.
 */
import type { ProviderRegistry } from '../providers/provider-registry.js';
import type { Result } from '../../lib/result.js';
import {
  mayHavePlaced,
  type CallToCancel,
  type CancelAnswer,
  type ProviderFailure,
  type VoiceProvider,
} from '../providers/provider.interface.js';
import type { Metrics } from './metrics.js';

type Operation = 'place_call' | 'check_call' | 'find_dial' | 'fetch_recording' | 'cancel_call';

export function instrumentProviders(registry: ProviderRegistry, metrics: Metrics): ProviderRegistry {
  const wrapped = new WeakMap<VoiceProvider, VoiceProvider>();
  const instrument = (provider: VoiceProvider): VoiceProvider => {
    let found = wrapped.get(provider);
    if (!found) {
      found = instrumentProvider(provider, metrics);
      wrapped.set(provider, found);
    }
    return found;
  };
  return {
    byName: (name) => instrument(registry.byName(name)),
    forCall: (agent, mode) => instrument(registry.forCall(agent, mode)),
  };
}

function instrumentProvider(provider: VoiceProvider, metrics: Metrics): VoiceProvider {
  // The labels are made once: every call placed and every check is timed.
  const labelsOf = {
    place_call: { provider: provider.name, operation: 'place_call' },
    check_call: { provider: provider.name, operation: 'check_call' },
    find_dial: { provider: provider.name, operation: 'find_dial' },
    fetch_recording: { provider: provider.name, operation: 'fetch_recording' },
    cancel_call: { provider: provider.name, operation: 'cancel_call' },
  } as const;
  const timed = async <T extends { ok: boolean; error?: { kind: string } }>(
    operation: Operation,
    request: () => Promise<T>,
  ): Promise<T> => {
    const labels = labelsOf[operation];
    // performance.now rather than prom-client's startTimer, which makes two closures and a labels object a time.
    const started = performance.now();
    try {
      const result = await request();
      metrics.providerDuration.observe(labels, (performance.now() - started) / 1000);
      if (!result.ok) metrics.providerFailures.inc({ ...labels, kind: result.error?.kind ?? 'error' });
      return result;
    } catch (error) {
      // Adapters return failures as values; a throw is a bug or a broken connection, counted apart.
      metrics.providerDuration.observe(labels, (performance.now() - started) / 1000);
      metrics.providerFailures.inc({ ...labels, kind: 'error' });
      throw error;
    }
  };
  const timedCancel = (cancel: (call: CallToCancel) => Promise<Result<CancelAnswer, ProviderFailure>>) => (call: CallToCancel) =>
    timed('cancel_call', () => cancel(call));
  return {
    name: provider.name,
    firstCheckDelayMs: provider.firstCheckDelayMs,
    placeCall: async (request) => {
      const result = await timed('place_call', () => provider.placeCall(request));
      metrics.callsPlaced.inc({ provider: provider.name, outcome: result.ok ? 'placed' : result.error.kind });
      metrics.dialsResolved.inc({ result: result.ok ? 'placed' : mayHavePlaced(result.error) ? 'lost' : 'refused' });
      return result;
    },
    checkCall: (call) => timed('check_call', () => provider.checkCall(call)),
    findDial: (dial) => timed('find_dial', () => provider.findDial(dial)),
    fetchRecording: (call, source) => timed('fetch_recording', () => provider.fetchRecording(call, source)),
    cancel: typeof provider.cancel === 'function' ? timedCancel(provider.cancel) : provider.cancel,
  };
}
