/**
 * A voice provider whose answers a test scripts: how long each attempt takes, whether it fails, and whether
 * it waits on a promise (a provider that hangs). Counts every attempt to place a call.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallCheck, ProviderFailure, VoiceProvider } from '../../src/features/providers/provider.interface.js';
import { newId } from '../../src/lib/ids.js';
import { err, ok } from '../../src/lib/result.js';
import { until } from './wait.js';

export interface FakeStep {
  readonly delayMs?: number;
  /** The attempt waits for this before it answers (a provider that hangs until the test lets go). */
  readonly until?: Promise<void>;
  readonly failure?: ProviderFailure;
  /** With `failure`: the call was placed all the same (its answer was lost), so `findDial` finds it. */
  readonly placed?: boolean;
}

export interface FakeProvider extends VoiceProvider {
  /** Attempts to place a call so far. */
  attempts: number;
  /** Attempts under way right now. */
  inFlight: number;
  /** Steps for the next attempts, used up in order; then `defaultStep`. */
  steps: FakeStep[];
  defaultStep: FakeStep;
  /** Dial id → conversation id of every call placed, for `findDial`. */
  readonly placedDials: Map<string, string>;
  /** When set, `findDial` answers this failure (a provider that cannot be asked). */
  findFailure: ProviderFailure | undefined;
  reset(): void;
}

export const failures = {
  unavailable: { kind: 'unavailable', message: 'The fake provider is down.', retryable: true },
  timeout: { kind: 'timeout', message: 'The fake provider did not answer.', retryable: true },
  uncertain: { kind: 'uncertain', message: 'The fake provider answered 500.', retryable: true },
  rejected: { kind: 'rejected', message: 'The fake provider refused the call.', retryable: false },
} as const satisfies Record<ProviderFailure['kind'], ProviderFailure>;

export function createFakeProvider(): FakeProvider {
  const fake: FakeProvider = {
    name: 'simulator',
    firstCheckDelayMs: 60_000,
    attempts: 0,
    inFlight: 0,
    steps: [],
    defaultStep: {},
    placedDials: new Map(),
    findFailure: undefined,
    reset() {
      fake.attempts = 0;
      fake.steps = [];
      fake.defaultStep = {};
      fake.placedDials.clear();
      fake.findFailure = undefined;
    },
    async placeCall(request) {
      fake.attempts += 1;
      fake.inFlight += 1;
      try {
        const step = fake.steps.shift() ?? fake.defaultStep;
        if (step.delayMs) await sleep(step.delayMs);
        if (step.until) await step.until;
        const conversationId = newId('conversation');
        if (!step.failure || step.placed) fake.placedDials.set(request.dialId, conversationId);
        if (step.failure) return err(step.failure);
        return ok({ conversationId });
      } finally {
        fake.inFlight -= 1;
      }
    },
    async findDial(dial) {
      if (fake.findFailure) return err(fake.findFailure);
      const conversationId = fake.placedDials.get(dial.dialId);
      return ok(conversationId === undefined ? { state: 'not_found' as const } : { state: 'found' as const, conversationId });
    },
    async fetchRecording() {
      return err({ kind: 'not_available' as const });
    },
    async cancel() {
      return ok({ state: 'ending' as const });
    },
    async checkCall() {
      // Calls never end here: these tests look at creation only.
      const check: CallCheck = { state: 'running', checkAgainAt: new Date(Date.now() + 3_600_000) };
      return ok(check);
    },
  };
  return fake;
}

/** Resolves once the provider has been asked `attempts` times (the first request holds its key by then). */
export async function untilAttempts(fake: FakeProvider, attempts: number, timeoutMs = 10_000): Promise<void> {
  await until(`the provider to be asked ${attempts} times`, () => (fake.attempts >= attempts ? true : undefined), timeoutMs);
}
