/**
 * An API request as a dial's origin (dial-origin.ts): POST /v1/calls, with its Idempotency-Key when it sent
 * one. The dial's record holds the key past any answer (a request that dies mid-dial must not let a retry
 * dial again); while a lost dial is checked, retries get its 504 or 503 (`lostAnswer`); the key completes
 * with the call's 201 in the transaction that stores the call, found after a lost answer too, and is freed
 * when the dial placed nothing or can never be known. A request without a key holds nothing.
 */
import { spokenDuration } from '../../lib/duration.js';
import type { Db } from '../../db/database.js';
import { addMs, type Clock } from '../../lib/clock.js';
import {
  answerWhileHeld,
  completeHeldKey,
  completeKey,
  holdKeyUntil,
  idempotencyLifetimeMs,
  keepKey,
  releaseHeldKey,
  type HeldAnswer,
  type HeldKey,
  type KeyHold,
  type StoredResponse,
} from '../idempotency/idempotency.service.js';
import type { ProviderFailure } from '../providers/provider.interface.js';
import type { CallCreated } from './calls.schemas.js';
import type { CallRow } from './calls.tables.js';
import type { DialOrigin, DialOriginPort } from './dial-origin.js';
import type { DialRow } from './dials.tables.js';

/** The 201 of a created call, as POST /v1/calls answers it and replays it. */
export function createdResponse(row: CallRow): StoredResponse {
  return {
    status: 201,
    body: {
      id: row.id,
      agent_id: row.agent_id,
      to: row.to_number,
      status: 'initiated',
      created_at: row.created_at,
      livemode: row.mode === 'live',
    } satisfies CallCreated,
    headers: { location: `/v1/calls/${row.id}` },
  };
}

/** What a request gets while its dial is checked: a 504 (no answer) or 503 (a 5xx, a dropped answer) to retry. */
export function lostAnswer(dial: DialRow, failure: ProviderFailure, keyed: boolean): HeldAnswer {
  // A test-mode dial is searched for a few seconds (the simulator's rehearsal): a retry after its search
  // ended (and a second for the dial job's look) gets the call or places it, not another 504.
  const testSearchSeconds = Math.ceil((Date.parse(dial.search_until) - Date.parse(dial.asked_at)) / 1000) + 1;
  const retryAfterSeconds = dial.mode === 'test' ? Math.max(1, testSearchSeconds) : 5;
  const what =
    failure.kind === 'timeout' ? 'The voice provider did not answer in time' : `The voice provider's answer was lost (${failure.message})`;
  const next = keyed
    ? `callgate is checking with the provider whether the call was placed (dial ${dial.id}) and holds this Idempotency-Key meanwhile. Retry after ${spokenDuration(retryAfterSeconds * 1000)} with the same key: you get the call if it was placed, or the call is placed if it was not; never a second one.`
    : `callgate is checking with the provider whether the call was placed (dial ${dial.id}); if it was, it appears in GET /v1/calls and its outcome event follows. Do not retry without an Idempotency-Key: that could place a second call.`;
  return { code: failure.kind === 'timeout' ? 'provider_timeout' : 'provider_unavailable', message: `${what}. ${next}`, retryAfterSeconds };
}

/** The key a dial recorded, if its request sent one. */
function keyHoldOf(dial: DialRow): KeyHold | null {
  if (dial.idempotency_route === null || dial.idempotency_key === null || dial.idempotency_owner === null) return null;
  return { scope: { apiKeyId: dial.api_key_id, route: dial.idempotency_route, key: dial.idempotency_key }, owner: dial.idempotency_owner };
}

/**
 * The port of API requests. `key` is the request's own, while it is under way (idempotency.plugin.ts frees
 * it at the request's end unless it was completed or kept); the dial job's port has none and reads the key
 * from the dial.
 */
export function requestPort(clock: Clock, key: HeldKey | null = null): DialOriginPort {
  const freeKey = async (db: Db, dial: DialRow) => {
    const hold = keyHoldOf(dial);
    if (hold) await releaseHeldKey(db, hold);
  };
  return {
    wakesWorkers: false,
    async hold(trx, dial, until) {
      const hold = keyHoldOf(dial);
      if (hold) await holdKeyUntil(trx, hold, until);
    },
    async lost(db, dial, failure) {
      const hold = keyHoldOf(dial);
      if (hold) await answerWhileHeld(db, hold, lostAnswer(dial, failure, true), addMs(clock.now(), idempotencyLifetimeMs));
    },
    async placed(trx, dial, call) {
      const hold = keyHoldOf(dial);
      if (key) await completeKey(trx, key, createdResponse(call));
      else if (hold) await completeHeldKey(trx, clock, hold, createdResponse(call));
      return true;
    },
    async notPlaced(_db, dial) {
      const note = keyHoldOf(dial) ? ' The Idempotency-Key is free: a retry places the call.' : '';
      return { note, end: (trx) => freeKey(trx, dial) };
    },
    abandoned: freeKey,
  };
}

/** An API request asking for a dial now, for `apiKey`'s account, holding `key` if it sent one. */
export function requestOrigin(clock: Clock, apiKey: DialOrigin['apiKey'], key: HeldKey | null): DialOrigin {
  if (!key) return { apiKey, columns: {}, port: requestPort(clock) };
  return {
    apiKey,
    columns: { idempotency_route: key.scope.route, idempotency_key: key.scope.key, idempotency_owner: key.owner },
    port: requestPort(clock, key),
    keep: () => keepKey(key),
  };
}
