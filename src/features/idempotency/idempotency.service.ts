/**
 * Idempotency-Key handling (spec 2.5 and 4.1 rule 3). A key is scoped to (API key, method + route, key).
 * The first request inserts an in-flight record and so holds the key; concurrent duplicates wait for it and
 * replay its response. Only successes are stored, for 24 hours from the first success; a failure releases
 * the key so that a retry runs anew. An in-flight record locks its key for a bounded time only, so a crash
 * mid-request never locks a key forever. Everything here returns values; src/http/idempotency.plugin.ts is
 * the HTTP edge that renders them, for every route whose config turns idempotency on.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { isDatabaseUnavailable, retryWhileUnavailable } from '../../db/unavailable.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { randomHex } from '../../lib/ids.js';
import { bodyFingerprint } from '../../lib/json.js';
import { retentionBatchSize } from '../../jobs/retention.js';
import * as repo from './idempotency.repository.js';
import type { IdempotencyScope } from './idempotency.repository.js';
import { idempotencyKeyPattern } from './idempotency.schemas.js';

export type { IdempotencyScope };

/** Spec 2.5: a stored response is replayed for 24 hours from the first success. */
export const idempotencyLifetimeMs = 24 * 60 * 60 * 1000;

export interface IdempotencySettings {
  /** How long a duplicate waits for the first request before answering 409. */
  readonly waitMs: number;
  /** How long an in-flight record holds its key before it counts as abandoned. */
  readonly lockMs: number;
  /** Hears each claim's result and each wait for a first request in progress (the metrics). */
  readonly observer?: { claimed(kind: Claim['kind']): void; waited(): void };
}

export interface StoredResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Readonly<Record<string, string>>;
}

export type Claim =
  | { readonly kind: 'owned'; readonly owner: string }
  | { readonly kind: 'replay'; readonly response: StoredResponse }
  /** The key is held for a different body (a success within its 24 hours, or a request in progress). */
  | { readonly kind: 'conflict' }
  /** The key's first request, with this body, was still in progress when the wait ended. */
  | { readonly kind: 'in_progress' }
  /** The key is held by a dial whose outcome is being checked: this answer stands until it is known. */
  | { readonly kind: 'held'; readonly answer: HeldAnswer };

/** What a request with a key held by an unresolved dial is answered (a 504 or 503 that says to retry). */
export interface HeldAnswer {
  readonly code: 'provider_timeout' | 'provider_unavailable' | 'idempotency_in_progress';
  readonly message: string;
  readonly retryAfterSeconds: number;
}

const idempotencyKeyRule = new RegExp(idempotencyKeyPattern);

/** The rule of the header's schema (idempotency.schemas.ts), checked here before any other of the request. */
export function isValidIdempotencyKey(key: string): boolean {
  return idempotencyKeyRule.test(key);
}

/** The Idempotency-Key header: absent, a valid key, or invalid (spec 4.1: a 400, whatever else is wrong). */
export type KeyHeader = { readonly kind: 'absent' } | { readonly kind: 'key'; readonly key: string } | { readonly kind: 'invalid' };

export function readIdempotencyKey(header: string | string[] | undefined): KeyHeader {
  if (header === undefined) return { kind: 'absent' };
  if (Array.isArray(header) || !isValidIdempotencyKey(header)) return { kind: 'invalid' };
  return { kind: 'key', key: header };
}

function replayOf(row: { response_status: number | null; response_body: string | null; response_headers: string | null }): StoredResponse {
  return {
    status: row.response_status ?? 200,
    body: row.response_body === null ? null : (JSON.parse(row.response_body) as unknown),
    headers: row.response_headers === null ? {} : (JSON.parse(row.response_headers) as Record<string, string>),
  };
}

function heldAnswerOf(row: { response_body: string | null }): HeldAnswer {
  return JSON.parse(row.response_body ?? '{}') as HeldAnswer;
}

const pollStartMs = 20;
const pollMaxMs = 250;

/**
 * Claims the key for a request whose body has fingerprint `requestHash`: `owned` (go ahead, then complete
 * or release it), `replay` (answer with the stored response), `conflict` or `in_progress` (answer 409).
 */
export async function claim(
  db: Db,
  clock: Clock,
  settings: IdempotencySettings,
  scope: IdempotencyScope,
  requestHash: string,
): Promise<Claim> {
  // 24 hex digits, as ever; from the id pool, not a call into OpenSSL per request.
  const owner = randomHex(12);
  try {
    const claimed = await claimAs(db, clock, settings, scope, requestHash, owner);
    settings.observer?.claimed(claimed.kind);
    return claimed;
  } catch (error) {
    // An insert or take-over may have committed just before its connection dropped, holding the key for an
    // owner nobody knows: free it once the database is back, or the key would stay locked for lockMs.
    if (isDatabaseUnavailable(error)) releaseOnceBack(db, scope, owner, settings.lockMs);
    throw error;
  }
}

async function claimAs(
  db: Db,
  clock: Clock,
  settings: IdempotencySettings,
  scope: IdempotencyScope,
  requestHash: string,
  owner: string,
): Promise<Claim> {
  // The wait is measured in real time: an injected test clock may stand still.
  const deadline = Date.now() + settings.waitMs;
  let pollMs = pollStartMs;
  for (;;) {
    const now = clock.now();
    const lockedUntil = isoTimestamp(addMs(now, settings.lockMs));
    const inserted = await repo.insertInFlight(db, {
      api_key_id: scope.apiKeyId,
      route: scope.route,
      idempotency_key: scope.key,
      request_hash: requestHash,
      state: 'in_progress',
      owner,
      response_status: null,
      response_body: null,
      response_headers: null,
      locked_until: lockedUntil,
      expires_at: null,
      created_at: isoTimestamp(now),
    });
    if (inserted) return { kind: 'owned', owner };

    const row = await repo.findRecord(db, scope);
    if (!row) continue; // released or purged between our insert and read: try again.

    if (row.state === 'completed') {
      if (row.expires_at !== null && row.expires_at <= isoTimestamp(now)) {
        // Rule 5: after 24 hours the key may start a new, different operation.
        await repo.deleteRecord(db, scope, { expiredBefore: isoTimestamp(now) });
        continue;
      }
      if (row.request_hash !== requestHash) return { kind: 'conflict' };
      return { kind: 'replay', response: replayOf(row) };
    }

    if (row.request_hash !== requestHash) return { kind: 'conflict' };
    // A dial's outcome being checked holds the key far longer than a request's wait: answered at once.
    if (row.response_status !== null && row.locked_until > isoTimestamp(now)) return { kind: 'held', answer: heldAnswerOf(row) };
    if (row.locked_until <= isoTimestamp(now)) {
      // The holder crashed or hung past its lock: this request takes the key over.
      if (await repo.takeOver(db, scope, row.owner, { owner, locked_until: lockedUntil, request_hash: requestHash })) {
        return { kind: 'owned', owner };
      }
      continue;
    }
    if (Date.now() >= deadline) return { kind: 'in_progress' };
    if (pollMs === pollStartMs) settings.observer?.waited();
    await sleep(pollMs);
    pollMs = Math.min(pollMaxMs, pollMs * 2);
  }
}

/**
 * Whether the key is held for a different body: by a success within its 24 hours, or by a request still in
 * progress. For a request refused before it could claim the key (its body broke the schema): spec 4.1 rule 3.3
 * answers a known key with a different body 409, whatever else is wrong with that body.
 */
export async function heldForAnotherBody(db: Db, clock: Clock, scope: IdempotencyScope, body: unknown): Promise<boolean> {
  const row = await repo.findRecord(db, scope);
  if (!row || row.request_hash === bodyFingerprint(body)) return false;
  const now = isoTimestamp(clock.now());
  return row.state === 'completed' ? row.expires_at === null || row.expires_at > now : row.locked_until > now;
}

/** Frees the key after a failure, so a retry with the same key is processed anew. */
export async function release(db: Db, scope: IdempotencyScope, owner: string): Promise<void> {
  await repo.deleteRecord(db, scope, { owner });
}

/**
 * Frees the key in the background once the database is back. Past its lock (`lockMs`) the key is free
 * anyway, so the retries stop there: a long outage does not pile them up.
 */
function releaseOnceBack(db: Db, scope: IdempotencyScope, owner: string, lockMs: number): void {
  void retryWhileUnavailable(() => release(db, scope, owner), { giveUpAfterMs: lockMs }).catch(() => undefined);
}

export interface IdempotencyDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly idempotency: IdempotencySettings;
}

/**
 * A key this request holds (idempotency.plugin.ts puts it on `request.idempotencyKey`), as the service that
 * creates the resource sees it: it completes the key with `completeKey` in the transaction that stores the
 * resource, or keeps it held with `keepKey` for a resource that is stored later. Any other ending frees it.
 */
export class HeldKey {
  #completed = false;
  #kept = false;

  constructor(
    readonly deps: IdempotencyDeps,
    readonly scope: IdempotencyScope,
    readonly owner: string,
  ) {}

  get completed(): boolean {
    return this.#completed;
  }

  get kept(): boolean {
    return this.#kept;
  }

  /** For `completeKey`, once its statement ran in the caller's transaction. */
  markCompleted(): void {
    this.#completed = true;
  }

  /** For `keepKey`. */
  markKept(): void {
    this.#kept = true;
  }
}

/**
 * Completes the key with `response`, in `trx`, the transaction that stores the resource: the two commit
 * together or not at all, and replays of the key then answer `response` for 24 hours. A key taken over
 * meanwhile (its lock ran out) is left to its new holder.
 */
export async function completeKey(trx: Db, key: HeldKey, response: StoredResponse): Promise<void> {
  await repo.markCompleted(trx, key.scope, key.owner, {
    status: response.status,
    body: JSON.stringify(response.body),
    headers: JSON.stringify(response.headers),
    expiresAt: isoTimestamp(addMs(key.deps.clock.now(), idempotencyLifetimeMs)),
  });
  key.markCompleted();
}

/** A key as a dial records it, to complete or free it later from any process (the dial's job). */
export interface KeyHold {
  readonly scope: IdempotencyScope;
  readonly owner: string;
}

/**
 * Holds the key until `until`, in `trx`, the transaction that records a dial: a request that dies mid-dial
 * must not let its key be taken over (and the number dialed again) before the dial is known. Throws the 503
 * idempotency_in_progress, and so rolls the dial back, when the request no longer holds the key: it was
 * slower than its lock, and a retry took the key over and dials for it.
 */
export async function holdKeyUntil(trx: Db, hold: KeyHold, until: Date): Promise<void> {
  if (await repo.extendLock(trx, hold.scope, hold.owner, isoTimestamp(until))) return;
  throw new ApiError(
    'idempotency_in_progress',
    'This request took longer than its Idempotency-Key lock, and a retry with the same key took the key over; that retry places the call (never both). Retry after the number of seconds in Retry-After, with the same key, to get its result.',
    { retryAfterSeconds: 1 },
  );
}

/** Sets the answer that requests with the key get while its dial is checked (and holds it until `until`). */
export async function answerWhileHeld(db: Db, hold: KeyHold, answer: HeldAnswer, until: Date): Promise<void> {
  await repo.setHeldAnswer(db, hold.scope, hold.owner, JSON.stringify(answer), isoTimestamp(until));
}

/** `completeKey` for a key a dial holds: its call was found, so replays answer `response`. */
export async function completeHeldKey(trx: Db, clock: Clock, hold: KeyHold, response: StoredResponse): Promise<void> {
  await repo.markCompleted(trx, hold.scope, hold.owner, {
    status: response.status,
    body: JSON.stringify(response.body),
    headers: JSON.stringify(response.headers),
    expiresAt: isoTimestamp(addMs(clock.now(), idempotencyLifetimeMs)),
  });
}

/** Frees a key a dial held: it placed no call, so a retry places it. */
export async function releaseHeldKey(db: Db, hold: KeyHold): Promise<void> {
  await release(db, hold.scope, hold.owner);
}

/**
 * Keeps the key held when the request ends without a success, for a resource that exists but is stored
 * later (with `completeKey`): a retry must get that resource, never a second one. The key's lock
 * (CALLGATE_IDEMPOTENCY_LOCK_MS) bounds how long retries wait for it.
 */
export function keepKey(key: HeldKey): void {
  key.markKept();
}

/**
 * The end of a request that held the key: frees it unless the request succeeded with the key completed, or
 * kept it. The free is conditional on the record still being in flight, so a completion that did commit
 * stays. When the database is away the key is freed in the background once it is back (rather than left
 * locked until its lock ends), and the request's own answer stands.
 */
export async function endHold(key: HeldKey, succeeded: boolean): Promise<void> {
  if (key.kept || (key.completed && succeeded)) return;
  try {
    await release(key.deps.db, key.scope, key.owner);
  } catch (error) {
    if (!isDatabaseUnavailable(error)) throw error;
    releaseOnceBack(key.deps.db, key.scope, key.owner, key.deps.idempotency.lockMs);
  }
}

/**
 * Claims the key for a request with this body: a `HeldKey` when it now holds it, or the stored response to
 * replay; throws the 409 idempotency_conflict when the key is held for another body or still in progress.
 */
export async function claimFor(
  deps: IdempotencyDeps,
  scope: IdempotencyScope,
  body: unknown,
): Promise<{ readonly kind: 'owned'; readonly key: HeldKey } | { readonly kind: 'replay'; readonly response: StoredResponse }> {
  const claimed = await claim(deps.db, deps.clock, deps.idempotency, scope, bodyFingerprint(body));
  switch (claimed.kind) {
    case 'owned':
      return { kind: 'owned', key: new HeldKey(deps, scope, claimed.owner) };
    case 'replay':
      return claimed;
    case 'conflict':
      throw new ApiError('idempotency_conflict');
    case 'in_progress':
      // A 5xx: spec 4.1 rule 4's clients retry it with the same key (a 409 they would not).
      throw new ApiError('idempotency_in_progress', undefined, { retryAfterSeconds: 1 });
    case 'held':
      throw new ApiError(claimed.answer.code, claimed.answer.message, { retryAfterSeconds: claimed.answer.retryAfterSeconds });
  }
}

/** Throws the 409 of spec 4.1 rule 3.3 when the key is held for a body other than this one (see `heldForAnotherBody`). */
export async function refuseIfHeldForAnotherBody(deps: IdempotencyDeps, scope: IdempotencyScope, body: unknown): Promise<void> {
  if (await heldForAnotherBody(deps.db, deps.clock, scope, body)) throw new ApiError('idempotency_conflict');
}

/** Deletes at most `limit` expired records; returns how many. */
export async function purgeExpired(db: Db, clock: Clock, settings: IdempotencySettings, limit = retentionBatchSize): Promise<number> {
  const now = clock.now();
  return repo.purgeExpired(db, isoTimestamp(now), isoTimestamp(addMs(now, -settings.lockMs)), limit);
}
