/** The dispatcher's queries: claim due deliveries under a lease, record attempts, release claims. */
import type { Db } from '../../db/database.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable, WebhookEndpointsTable } from '../../db/schema.js';
import type { Insertable } from 'kysely';

export interface ClaimedDelivery {
  id: string;
  event_id: string;
  endpoint_id: string;
  attempt_count: number;
  payload: string;
  url: string;
  enabled: number;
  deleted_at: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  failing_since: string | null;
}

/**
 * Claims up to `limit` due deliveries for `workerId` until `leaseUntil`. One statement: on PostgreSQL the
 * rows are picked with FOR UPDATE SKIP LOCKED, so workers never wait for or take each other's rows; SQLite
 * runs one writer at a time, so the same conditional UPDATE is atomic there.
 */
export async function claimDueDeliveries(
  db: Db,
  dialect: 'sqlite' | 'postgres',
  workerId: string,
  now: string,
  leaseUntil: string,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const claimed = await db
    .updateTable('webhook_deliveries')
    .set({ locked_by: workerId, locked_until: leaseUntil })
    .where('id', 'in', (eb) => {
      let due = eb
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<=', now)]))
        .orderBy('next_attempt_at')
        .limit(limit);
      if (dialect === 'postgres') due = due.forUpdate().skipLocked();
      return due;
    })
    .where('status', '=', 'pending')
    .returning(['id'])
    .execute();
  if (claimed.length === 0) return [];
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .innerJoin('webhook_endpoints as w', 'w.id', 'd.endpoint_id')
    .select([
      'd.id',
      'd.event_id',
      'd.endpoint_id',
      'd.attempt_count',
      'e.payload',
      'w.url',
      'w.enabled',
      'w.deleted_at',
      'w.secret',
      'w.previous_secret',
      'w.previous_secret_expires_at',
      'w.failing_since',
    ])
    .where(
      'd.id',
      'in',
      claimed.map((row) => row.id),
    )
    .where('d.locked_by', '=', workerId)
    .execute();
}

export interface AttemptRecord {
  attempt: Insertable<WebhookAttemptsTable> | null;
  deliveryId: string;
  workerId: string;
  delivery: Partial<WebhookDeliveriesTable>;
  endpointId: string;
  endpoint: Partial<WebhookEndpointsTable> | null;
}

/**
 * Writes the results of several attempts in one transaction (one fsync for many deliveries). Rows are
 * locked in one fixed order, endpoints then deliveries, each by id: two workers recording batches that
 * touch the same endpoints would otherwise deadlock on PostgreSQL, and the losing batch would stay
 * claimed until its lease ended and then be sent again.
 */
export async function recordAttempts(db: Db, records: readonly AttemptRecord[]): Promise<void> {
  // Several results for one endpoint become one update, applied in the order the results came.
  const endpointChanges = new Map<string, Partial<WebhookEndpointsTable>>();
  for (const record of records) {
    if (record.endpoint) endpointChanges.set(record.endpointId, { ...endpointChanges.get(record.endpointId), ...record.endpoint });
  }
  const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  await db.transaction().execute(async (trx) => {
    for (const id of [...endpointChanges.keys()].sort(byId)) {
      await trx.updateTable('webhook_endpoints').set(endpointChanges.get(id)!).where('id', '=', id).execute();
    }
    for (const record of [...records].sort((a, b) => byId(a.deliveryId, b.deliveryId))) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ ...record.delivery, locked_by: null, locked_until: null })
        .where('id', '=', record.deliveryId)
        .where('locked_by', '=', record.workerId)
        .execute();
    }
    const attempts = records.flatMap((record) => (record.attempt ? [record.attempt] : []));
    if (attempts.length > 0) await trx.insertInto('webhook_attempts').values(attempts).execute();
  });
}

/** Gives claimed deliveries back (shutdown), so another worker may take them at once. */
export async function releaseClaims(db: Db, workerId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('webhook_deliveries')
    .set({ locked_by: null, locked_until: null })
    .where('id', 'in', [...ids])
    .where('locked_by', '=', workerId)
    .execute();
}
