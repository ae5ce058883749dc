/**
 * The account concurrency limit: an account with `max_concurrent_calls` never has more calls in progress at
 * once in one mode, whichever API and worker processes place them on one database.
 *
 * - What counts: the account's calls placed without an outcome yet (`initiated`), and the slots held for
 *   calls being placed. A slot is taken before the provider is asked and dropped once the call is stored
 *   (the stored call holds the place from then on, until its outcome is recorded: the call monitor, the
 *   provider's webhook or the reconciliation), or once the provider refused it.
 * - Atomic: the count and the taking of slots happen in one transaction under the account's row lock
 *   (`lockLimit`), so two processes never both take the last free slot.
 * - A holder that dies between taking a slot and storing its call frees it with its lease (`expires_at`):
 *   the Idempotency-Key's lock for POST /v1/calls, the dialing lease for a batch's recipient.
 * - Live and test calls count apart, each against the same limit: a simulated call never takes the place of
 *   a real one, and a test key meets the limit (and its 429) as a live key would.
 */
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import { addMs, isoTimestamp, type Clock } from '../../lib/clock.js';
import { newId } from '../../lib/ids.js';
import type { ApiKeyMode } from '../api-keys/api-keys.tables.js';
import * as repo from './concurrency.repository.js';

/**
 * `Retry-After` of a 429 concurrency_limit_exceeded. A slot frees when one of the account's calls ends,
 * which nobody can foresee (a call lasts seconds to many minutes): 5 s is a pace of asking again that
 * costs little and loses little once a call has ended.
 */
export const concurrencyRetryAfterSeconds = 5;

/** The account's slots now, under its lock: `free` is Infinity without a limit. */
export interface SlotCount {
  readonly limit: number | null;
  readonly inProgress: number;
  readonly free: number;
}

/**
 * Locks the account (for the rest of the transaction `trx`) and counts its calls in progress in `mode`; the
 * caller takes at most `free` slots with `takeSlots` in the same transaction. Without a limit nothing is
 * locked or counted. Slots whose lease ended are dropped here.
 */
export async function lockFreeSlots(trx: Db, accountId: string, mode: ApiKeyMode, now: Date): Promise<SlotCount> {
  // Read first without the lock: an account without a limit (most) is not serialised by it.
  if (((await repo.readLimit(trx, accountId)) ?? null) === null) return unlimited;
  return lockAndCount(trx, accountId, mode, now);
}

const unlimited: SlotCount = { limit: null, inProgress: 0, free: Number.POSITIVE_INFINITY };

async function lockAndCount(trx: Db, accountId: string, mode: ApiKeyMode, now: Date): Promise<SlotCount> {
  const limit = (await repo.lockLimit(trx, accountId)) ?? null;
  if (limit === null) return unlimited;
  const at = isoTimestamp(now);
  await repo.deleteExpiredSlots(trx, accountId, at);
  const inProgress = await repo.countInProgress(trx, accountId, mode, at);
  return { limit, inProgress, free: Math.max(0, limit - inProgress) };
}

/** Takes a slot for each of `ids` (its holders' ids), until `expiresAt`; in the transaction of `lockFreeSlots`. */
export async function takeSlots(
  trx: Db,
  accountId: string,
  mode: ApiKeyMode,
  ids: readonly string[],
  now: Date,
  expiresAt: Date,
): Promise<void> {
  const createdAt = isoTimestamp(now);
  const expires = isoTimestamp(expiresAt);
  await repo.insertSlots(
    trx,
    ids.map((id) => ({ id, account_id: accountId, mode, expires_at: expires, created_at: createdAt })),
  );
}

/**
 * Drops slots once their calls are stored (or were not placed). Never throws: a slot that could not be
 * dropped (the database away) frees itself when its lease ends, and until then only errs on the safe side.
 */
export async function releaseSlots(db: Db, ids: readonly string[]): Promise<void> {
  await repo.deleteSlots(db, ids).catch(() => undefined);
}

/**
 * Drops slots in the transaction `trx` that stores the calls taking their place: no count ever sees a call
 * and its slot both, which would count it twice and leave a slot unused. Unlike `releaseSlots` it throws,
 * so that the transaction fails whole.
 */
export async function handOverSlots(trx: Db, ids: readonly string[]): Promise<void> {
  await repo.deleteSlots(trx, ids);
}

/** The account's limit read without the lock (null: none), for `holdCallSlot`'s `unlockedLimit`. */
export async function concurrencyLimitOf(db: Db, accountId: string): Promise<number | null> {
  return (await repo.readLimit(db, accountId)) ?? null;
}

export type CallSlot = { readonly kind: 'unlimited' } | { readonly kind: 'held'; readonly id: string };

/** The 429 of an account with as many calls in progress in `mode` as its limit. */
function limitReached(mode: ApiKeyMode, limit: number, inProgress: number): ApiError {
  return new ApiError(
    'concurrency_limit_exceeded',
    `This account has ${inProgress} ${mode} call${inProgress === 1 ? '' : 's'} in progress and a limit of ${limit} (max_concurrent_calls); no call was placed. Retry after Retry-After seconds (with the same Idempotency-Key), once a call has ended, or ask your callgate operator to raise the limit.`,
    { retryAfterSeconds: concurrencyRetryAfterSeconds },
  );
}

/**
 * A slot for one call about to be placed (POST /v1/calls), held for `leaseMs` at most; throws the 429
 * concurrency_limit_exceeded when the account has as many calls in progress as its limit. The caller
 * releases a held slot once the call is stored or refused (`releaseSlots`).
 */
export async function holdCallSlot(
  db: Db,
  clock: Clock,
  slot: {
    readonly accountId: string;
    readonly mode: ApiKeyMode;
    readonly leaseMs: number;
    /** The account's limit as read without the lock earlier in this request (`concurrencyLimitOf`); absent, it is read here. */
    readonly unlockedLimit?: number | null;
  },
): Promise<CallSlot> {
  // Unlocked first: an account without a limit (most) costs no transaction; with one, it is read again under the lock.
  const limit = slot.unlockedLimit !== undefined ? slot.unlockedLimit : await repo.readLimit(db, slot.accountId);
  if ((limit ?? null) === null) return { kind: 'unlimited' };
  return db.transaction().execute(async (trx): Promise<CallSlot> => {
    const now = clock.now();
    const count = await lockAndCount(trx, slot.accountId, slot.mode, now);
    if (count.limit === null) return { kind: 'unlimited' };
    if (count.free <= 0) throw limitReached(slot.mode, count.limit, count.inProgress);
    const id = newId('callSlot', now.getTime());
    await takeSlots(trx, slot.accountId, slot.mode, [id], now, addMs(now, slot.leaseMs));
    return { kind: 'held', id };
  });
}

/** The account's limit and its calls in progress in each mode now (the portal's overview). */
export async function concurrencyOf(
  db: Db,
  clock: Clock,
  accountId: string,
): Promise<{ limit: number | null; live: number; test: number }> {
  const at = isoTimestamp(clock.now());
  const [limit, live, test] = await Promise.all([
    repo.readLimit(db, accountId),
    repo.countInProgress(db, accountId, 'live', at),
    repo.countInProgress(db, accountId, 'test', at),
  ]);
  return { limit: limit ?? null, live, test };
}

/** The accounts and modes at their limit of calls at once now (a hint read without the lock: see `holdCallSlot` for the rule). */
export async function accountsAtLimit(db: Db, now: Date): Promise<{ readonly accountId: string; readonly mode: ApiKeyMode }[]> {
  const rows = await repo.accountsAtLimit(db, isoTimestamp(now));
  return rows.map((row) => ({ accountId: row.account_id, mode: row.mode }));
}
