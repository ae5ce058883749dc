import { sql, type Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import { preparedQuery } from '../../db/prepared.js';
import { accountLimitOf } from '../concurrency/concurrency.repository.js';
import type { ApiKeyRow, ApiKeysTable, AuthenticatedKey } from './api-keys.tables.js';

export async function insertApiKey(db: Db, row: Insertable<ApiKeysTable>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/**
 * The key of a token's hash, with its account's concurrency limit: a POST /v1/calls needs the limit too, and
 * reading it here spares it a statement of its own (a round trip on PostgreSQL) on every created call.
 */
export async function findApiKeyWithAccountLimitByHash(db: Db, tokenHash: string): Promise<AuthenticatedKey | undefined> {
  const { rows } = await selectApiKeyByHash(db, { tokenHash });
  return rows[0];
}

function apiKeyByHash(db: Db, p: { tokenHash: string }) {
  return db
    .selectFrom('api_keys')
    .selectAll('api_keys')
    .select(accountLimitOf(sql.ref('api_keys.account_id')).as('account_max_concurrent_calls'))
    .where('token_hash', '=', p.tokenHash);
}

// Prepared: every authenticated request runs it.
const selectApiKeyByHash = preparedQuery('api key by hash', apiKeyByHash);

/** What a key's requests are counted under by the per-key rate limiter. */
export const keyCounterPrefix = 'key:';

/**
 * The key of a token's hash as `findApiKeyWithAccountLimitByHash` reads it, for the per-key rate limiter to run
 * with its count (its `countWith`): `rate_limit_name` is the key's counter, null for a revoked key, which is
 * not counted (its request is counted per client IP, as an unknown key's).
 */
export const apiKeyByHashCounted = (db: Db, p: { tokenHash: string }) =>
  apiKeyByHash(db, p).select(
    sql<string | null>`case when api_keys.revoked_at is null then ${sql.lit(keyCounterPrefix)} || api_keys.id end`.as('rate_limit_name'),
  );

export async function findApiKeyById(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

/** A key of this account only; another account's key is as absent as an unknown one. */
export async function findApiKeyInAccount(db: Db, accountId: string, id: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).where('id', '=', id).executeTakeFirst();
}

export async function listApiKeysByAccount(db: Db, accountId: string): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc').execute();
}

/** Sets revoked_at once; a key already revoked keeps its first revocation time. */
export async function revokeApiKey(db: Db, id: string, at: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** Records a use, but only when the stored value is older than `staleBefore` (or unset). */
export async function touchApiKeyLastUsed(db: Db, id: string, at: string, staleBefore: string): Promise<void> {
  await touchLastUsed(db, { id, at, staleBefore });
}

// Prepared: each key makes it once a minute, so a busy installation makes it many times a second.
const touchLastUsed = preparedQuery('api key last used', (db, p: { id: string; at: string; staleBefore: string }) =>
  db
    .updateTable('api_keys')
    .set({ last_used_at: p.at })
    .where('id', '=', p.id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', p.staleBefore)])),
);
