/**
 * Writing events: the outbox. An event is immutable and written in the caller's transaction, so it exists
 * exactly when the change that caused it was committed. This room is the bottom of the webhook rooms and
 * knows neither endpoints nor deliveries: webhook-delivery, above it, writes an event's deliveries in the
 * same transaction (its fan-out.service.ts, which the features that cause events call), and deletes old
 * events after their deliveries (its event retention).
 */
import type { ListCursor } from '../../db/cursor.js';
import type { Db } from '../../db/database.js';
import { isoTimestamp } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import type { EventType } from './event-types.js';
import * as repo from './events.repository.js';
import type { WebhookEventRow } from './events.tables.js';

export interface EventEnvelope<T = unknown> {
  id: string;
  type: EventType;
  created_at: string;
  /** Whether the event is of live mode (a test-mode key's calls and batches make test events), as Stripe marks it. */
  livemode: boolean;
  data: T;
}

export interface NewEvent {
  accountId: string;
  /** The mode of the call or batch the event reports (null for `webhook.test`): API keys read their mode's events only. */
  mode: ApiKeyMode | null;
  type: EventType;
  /** The envelope's `livemode` when the mode cannot say (a `webhook.test`: its endpoint's mode). */
  livemode?: boolean;
  callId: string | null;
  data: unknown;
}

/** Writes events created at `now` in `db` (the caller's transaction), in one statement; returns their ids in the order of `inputs`. */
export async function writeEvents(db: Db, now: Date, inputs: readonly NewEvent[]): Promise<string[]> {
  if (inputs.length === 0) return [];
  const createdAt = isoTimestamp(now);
  const events = inputs.map((input) => {
    const eventId = newId('event', now.getTime());
    const livemode = input.livemode ?? input.mode === 'live';
    const envelope: EventEnvelope = { id: eventId, type: input.type, created_at: createdAt, livemode, data: input.data };
    return {
      id: eventId,
      account_id: input.accountId,
      mode: input.mode,
      type: input.type,
      call_id: input.callId,
      payload: JSON.stringify(envelope),
      created_at: createdAt,
    };
  });
  await repo.insertEvents(db, events);
  return events.map((event) => event.id);
}

/** Events created before `before`, oldest first, from after `after` on (retention walks them in pages). */
export async function listEventsCreatedBefore(
  db: Db,
  before: string,
  after: ListCursor | undefined,
  limit: number,
): Promise<Pick<WebhookEventRow, 'id' | 'created_at'>[]> {
  return repo.listEventsCreatedBefore(db, before, after, limit);
}

/** Deletes these events (retention, once their deliveries are gone); returns how many went. */
export async function deleteEvents(db: Db, ids: readonly string[]): Promise<number> {
  return repo.deleteEvents(db, ids);
}

/**
 * Rewrites the stored envelopes of `type` about these calls: the one exception to an event being immutable,
 * for personal data the operator said to forget (a call's analysis data after CALLGATE_TRANSCRIPT_RETENTION).
 * A delivery still to be made then carries the rewritten body. Returns how many events changed.
 */
export async function rewriteCallEvents(
  db: Db,
  callIds: readonly string[],
  type: EventType,
  rewrite: (envelope: EventEnvelope) => EventEnvelope,
): Promise<number> {
  if (callIds.length === 0) return 0;
  let changed = 0;
  for (const row of await repo.listCallEventPayloads(db, callIds, type)) {
    const payload = JSON.stringify(rewrite(JSON.parse(row.payload) as EventEnvelope));
    if (payload === row.payload) continue;
    await repo.setEventPayload(db, row.id, payload);
    changed += 1;
  }
  return changed;
}
