import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { CallRow } from '../calls/calls.tables.js';

/** What every provider's webhook service needs (the shared route hands it over with the request's logger). */
export interface ProviderWebhookDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly logger: FastifyBaseLogger;
  /** Called when an outcome was recorded, to wake the webhook dispatcher. */
  readonly onOutcome: () => void;
  /** Hears each call ended (the metrics). */
  readonly observeEnded?: (call: CallRow) => void;
  /** Told that a call is to be looked at at `at` (the call monitor's timer), when the rest of its outcome is due. */
  readonly onCheckDue?: (callId: string, at: Date) => void;
}

/**
 * What a webhook did: recorded the call's outcome, found it already recorded, set a look at the call for
 * the rest of its outcome, accepted news that ends nothing, named no call of ours, or was of a kind we
 * do not use.
 */
export type ProviderWebhookHandling =
  | 'recorded'
  | 'duplicate'
  | 'awaiting_outcome'
  | 'accepted'
  | 'held'
  | 'unknown_conversation'
  | 'ignored';
