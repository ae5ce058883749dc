/**
 * When the call monitor asks a provider again about a call whose end was not reported, and when it stops
 * asking: the same rules for every real provider.
 */
import type { CallCheck } from './provider.interface.js';

/** A call with no outcome this long after creation ends as failed with reason `timeout`. */
export const giveUpAfterMs = 24 * 60 * 60 * 1000;
const minRecheckMs = 60_000;
const maxRecheckMs = 30 * 60_000;

/** Not over yet: look again after a quarter of the call's age, from a minute to half an hour. */
export function checkLater(now: Date, createdAt: Date): CallCheck {
  const ageMs = now.getTime() - createdAt.getTime();
  return {
    state: 'running',
    checkAgainAt: new Date(now.getTime() + Math.min(maxRecheckMs, Math.max(minRecheckMs, Math.round(ageMs / 4)))),
  };
}

export function givenUp(now: Date): CallCheck {
  return {
    state: 'ended',
    outcome: { status: 'failed', reason: 'timeout', message: 'No outcome was reported within 24 hours.', failedAt: now },
  };
}

export function isPastGiveUp(now: Date, createdAt: Date): boolean {
  return now.getTime() - createdAt.getTime() >= giveUpAfterMs;
}

/** Metadata values as a provider that takes only strings wants them: numbers and booleans as JSON text, null as ''. */
export function stringVariables(metadata: Readonly<Record<string, string | number | boolean | null>> | null): Record<string, string> {
  const variables: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata ?? {})) {
    variables[key] = value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  }
  return variables;
}

/** The dynamic variable (and metadata key) that carries callgate's dial id to Retell and Vapi, as to ElevenLabs. */
export const dialIdKey = 'callgate_dial_id';

/** A search for a lost dial starts this long before it was sent (clocks differ). */
export const searchMarginMs = 60_000;

/** A provider call id callgate keeps: it becomes `call_<id>`, at most 100 characters in a path. */
export const providerCallIdRule = /^[A-Za-z0-9_-]{1,90}$/;
