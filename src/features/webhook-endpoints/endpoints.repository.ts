/** The statements of the webhook_endpoints table. */
import type { Insertable, Updateable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { WebhookEndpointRow, WebhookEndpointsTable } from './endpoints.tables.js';

export async function insertEndpoint(db: Db, row: Insertable<WebhookEndpointsTable>): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function findEndpoint(db: Db, id: string): Promise<WebhookEndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
}

/** Endpoints by id, deleted ones too (a delivery outlives its endpoint's deletion). */
export async function listEndpointsByIds(db: Db, ids: readonly string[]): Promise<WebhookEndpointRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', 'in', [...ids])
    .execute();
}

export async function listEndpointsByAccount(db: Db, accountId: string): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('deleted_at', 'is', null)
    .orderBy('id')
    .execute();
}

/** Every endpoint of the installation, enabled or not (deleted ones aside), by account then id (`callgate doctor`). */
export async function listAllEndpoints(db: Db): Promise<WebhookEndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('deleted_at', 'is', null).orderBy('account_id').orderBy('id').execute();
}

/** The enabled endpoints of these accounts, in id order. */
export async function listEnabledEndpointsOfAccounts(db: Db, accountIds: readonly string[]): Promise<WebhookEndpointRow[]> {
  if (accountIds.length === 0) return [];
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', 'in', [...accountIds])
    .where('deleted_at', 'is', null)
    .where('enabled', '=', 1)
    .orderBy('id')
    .execute();
}

export async function updateEndpoint(db: Db, id: string, changes: Updateable<WebhookEndpointsTable>): Promise<void> {
  await db.updateTable('webhook_endpoints').set(changes).where('id', '=', id).execute();
}

/** The endpoints of an account in one mode that are not deleted. */
export async function countEndpointsOfMode(db: Db, accountId: string, mode: WebhookEndpointRow['mode']): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('account_id', '=', accountId)
    .where('mode', '=', mode)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** A page of an account's endpoints of one mode, newest first (ids sort by creation), after `startingAfter` when given. */
export async function listEndpointsPage(
  db: Db,
  filter: {
    readonly accountId: string;
    readonly mode: WebhookEndpointRow['mode'];
    readonly limit: number;
    readonly url?: string;
    readonly startingAfter?: string;
  },
): Promise<WebhookEndpointRow[]> {
  let query = db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('account_id', '=', filter.accountId)
    .where('mode', '=', filter.mode)
    .where('deleted_at', 'is', null);
  if (filter.url !== undefined) query = query.where('url', '=', filter.url);
  if (filter.startingAfter !== undefined) query = query.where('id', '<', filter.startingAfter);
  return query.orderBy('id', 'desc').limit(filter.limit).execute();
}
