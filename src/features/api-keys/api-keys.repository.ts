import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { ApiKeyRow, ApiKeysTable } from './api-keys.tables.js';

export async function insertApiKey(db: Db, row: Insertable<ApiKeysTable>): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** The key of a token's hash. */
export async function findApiKeyByHash(db: Db, tokenHash: string): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** What a key's requests are counted under by the per-key rate limiter. */
export const keyCounterPrefix = 'key:';

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
  await db
    .updateTable('api_keys')
    .set({ last_used_at: at })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', staleBefore)]))
    .execute();
}
