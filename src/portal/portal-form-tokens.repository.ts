import type { Db } from '../db/database.js';
import type { PortalFormTokensTable } from './portal.tables.js';

/** Records a form token as used; false when it was used before (or is being used right now). */
export async function claimFormToken(db: Db, row: PortalFormTokensTable): Promise<boolean> {
  const result = await db
    .insertInto('portal_form_tokens')
    .values(row)
    .onConflict((oc) => oc.column('token').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function setFormTokenKey(db: Db, token: string, apiKeyId: string): Promise<void> {
  await db.updateTable('portal_form_tokens').set({ api_key_id: apiKeyId }).where('token', '=', token).execute();
}

export async function findFormToken(db: Db, token: string) {
  return db.selectFrom('portal_form_tokens').selectAll().where('token', '=', token).executeTakeFirst();
}

export async function deleteFormTokensBefore(db: Db, before: string): Promise<void> {
  await db.deleteFrom('portal_form_tokens').where('created_at', '<', before).execute();
}

/** Frees a claimed token (its form made nothing), so that the same form can be sent again. */
export async function releaseFormToken(db: Db, token: string): Promise<void> {
  await db.deleteFrom('portal_form_tokens').where('token', '=', token).where('api_key_id', 'is', null).execute();
}

/** Deletes at most `limit` form tokens made before `before`; returns how many. */
export async function purgeFormTokensBefore(db: Db, before: string, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('portal_form_tokens')
    .where('token', 'in', (eb) =>
      eb.selectFrom('portal_form_tokens').select('token').where('created_at', '<', before).orderBy('created_at').limit(limit),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
