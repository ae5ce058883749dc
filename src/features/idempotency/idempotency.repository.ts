/** The statements of `idempotency_keys`: claim, read, take over, complete, release and purge a key's record. */
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { IdempotencyKeysTable, IdempotencyRow } from './idempotency.tables.js';

export interface IdempotencyScope {
  readonly apiKeyId: string;
  readonly route: string;
  readonly key: string;
}

type KeysFilter = (eb: ExpressionBuilder<Database, 'idempotency_keys'>) => Expression<SqlBool>;

function keyColumns(scope: IdempotencyScope) {
  return { api_key_id: scope.apiKeyId, route: scope.route, idempotency_key: scope.key };
}

/** The record of one key. */
function recordOf(scope: IdempotencyScope): KeysFilter {
  return (eb) => eb.and(keyColumns(scope));
}

/** The record of one key while `owner` holds it in flight: the only one its holder may change. */
function heldBy(scope: IdempotencyScope, owner: string): KeysFilter {
  return (eb) => eb.and({ ...keyColumns(scope), owner, state: 'in_progress' });
}

/** Inserts an in-flight record unless one exists; true when this request now holds the key. */
export async function insertInFlight(db: Db, row: IdempotencyKeysTable): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values(row)
    .onConflict((oc) => oc.columns(['api_key_id', 'route', 'idempotency_key']).doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function findRecord(db: Db, scope: IdempotencyScope): Promise<IdempotencyRow | undefined> {
  return db.selectFrom('idempotency_keys').selectAll().where(recordOf(scope)).executeTakeFirst();
}

/** Takes over an in-flight record whose holder stopped answering (its lock expired). */
export async function takeOver(
  db: Db,
  scope: IdempotencyScope,
  previousOwner: string,
  next: { owner: string; locked_until: string; request_hash: string },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    // A held answer of the previous holder (setHeldAnswer) goes with it.
    .set({ ...next, response_status: null, response_body: null, response_headers: null })
    .where(heldBy(scope, previousOwner))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Completes the in-flight record `owner` holds with the response of its first success, kept until
 * `expiresAt`; in the caller's transaction, beside the resource it created.
 */
export async function markCompleted(
  db: Db,
  scope: IdempotencyScope,
  owner: string,
  response: { readonly status: number; readonly body: string; readonly headers: string; readonly expiresAt: string },
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({
      state: 'completed',
      response_status: response.status,
      response_body: response.body,
      response_headers: response.headers,
      expires_at: response.expiresAt,
    })
    .where(heldBy(scope, owner))
    .execute();
}

/** Moves the lock of the in-flight record `owner` holds to `lockedUntil`; false when `owner` holds it no more. */
export async function extendLock(db: Db, scope: IdempotencyScope, owner: string, lockedUntil: string): Promise<boolean> {
  const result = await db.updateTable('idempotency_keys').set({ locked_until: lockedUntil }).where(heldBy(scope, owner)).executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/**
 * Gives the in-flight record `owner` holds the answer that its duplicates get meanwhile (kept in the
 * response columns, which a completed record uses for its response), and its lock.
 */
export async function setHeldAnswer(db: Db, scope: IdempotencyScope, owner: string, answer: string, lockedUntil: string): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response_status: 503, response_body: answer, locked_until: lockedUntil })
    .where(heldBy(scope, owner))
    .execute();
}

/** Deletes a record: an in-flight one held by `owner`, or a completed one that expired. */
export async function deleteRecord(
  db: Db,
  scope: IdempotencyScope,
  condition: { owner: string } | { expiredBefore: string },
): Promise<void> {
  const query = db.deleteFrom('idempotency_keys');
  await ('owner' in condition
    ? query.where(heldBy(scope, condition.owner))
    : query.where(recordOf(scope)).where('state', '=', 'completed').where('expires_at', '<=', condition.expiredBefore)
  ).execute();
}
/** Removes at most `limit` completed records past their 24 hours and in-flight ones abandoned long ago. */
export async function purgeExpired(db: Db, now: string, abandonedBefore: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('idempotency_keys')
    .where((eb) =>
      eb(
        eb.refTuple('api_key_id', 'route', 'idempotency_key'),
        'in',
        eb
          .selectFrom('idempotency_keys')
          .select(['api_key_id', 'route', 'idempotency_key'])
          .where((inner) =>
            inner.or([
              inner.and([inner('state', '=', 'completed'), inner('expires_at', '<=', now)]),
              inner.and([inner('state', '=', 'in_progress'), inner('locked_until', '<=', abandonedBefore)]),
            ]),
          )
          .limit(limit)
          .$asTuple('api_key_id', 'route', 'idempotency_key'),
      ),
    )
    // An in-flight record that was completed or taken over since the select is not expired any more.
    .where((eb) =>
      eb.or([
        eb.and([eb('state', '=', 'completed'), eb('expires_at', '<=', now)]),
        eb.and([eb('state', '=', 'in_progress'), eb('locked_until', '<=', abandonedBefore)]),
      ]),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
