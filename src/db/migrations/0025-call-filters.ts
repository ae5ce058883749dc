import { sql, type Kysely } from 'kysely';

/*
 * GET /v1/calls filters by `to`, `batch_id`, `reference` and `agent_id` (issue 38). Each equality gets an
 * index of (account_id, <column>, created_at, id): the list's order, so a page is read in order from the
 * filter's range, a created_after / created_before bound narrowing it, instead of walking every call of the
 * account newest first and testing each (which read a million rows for a rare number). The batch and
 * reference indexes hold only the calls batches placed (single calls have neither). created_after /
 * created_before alone are ranges of the (account_id, created_at, id) index of 0007.
 *
 * Also: the call, batch and recipient resources now carry `livemode`. A 201 stored for an Idempotency-Key
 * before this upgrade is replayed for up to 24 hours; it gains `livemode` (its key's mode) here, so that a
 * replay answers the shape of today (the response schema requires the field).
 */

const filterIndexes = [
  { name: 'calls_account_to_created_idx', column: 'to_number', partial: false },
  { name: 'calls_account_agent_created_idx', column: 'agent_id', partial: false },
  { name: 'calls_account_batch_created_idx', column: 'batch_id', partial: true },
  { name: 'calls_account_reference_created_idx', column: 'reference', partial: true },
] as const;

/** The creating routes whose 201 is a resource that now has `livemode`. */
const livemodeRoutes = ['POST /v1/calls', 'POST /v1/batches'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  for (const index of filterIndexes) {
    const create = db.schema.createIndex(index.name).on('calls').columns(['account_id', index.column, 'created_at', 'id']);
    await (index.partial ? create.where(sql.ref(index.column), 'is not', null) : create).execute();
  }
  await addLivemodeToStoredAnswers(db);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function addLivemodeToStoredAnswers(db: Kysely<any>): Promise<void> {
  const rows: { api_key_id: string; route: string; idempotency_key: string; response_body: string; mode: string }[] = await db
    .selectFrom('idempotency_keys as k')
    .innerJoin('api_keys as a', 'a.id', 'k.api_key_id')
    .select(['k.api_key_id', 'k.route', 'k.idempotency_key', 'k.response_body', 'a.mode'])
    .where('k.state', '=', 'completed')
    .where('k.response_status', '=', 201)
    .where('k.route', 'in', livemodeRoutes)
    .execute();
  for (const row of rows) {
    const body = JSON.parse(row.response_body) as Record<string, unknown>;
    if ('livemode' in body) continue;
    await db
      .updateTable('idempotency_keys')
      .set({ response_body: JSON.stringify({ ...body, livemode: row.mode === 'live' }) })
      .where('api_key_id', '=', row.api_key_id)
      .where('route', '=', row.route)
      .where('idempotency_key', '=', row.idempotency_key)
      .execute();
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  for (const index of filterIndexes) await db.schema.dropIndex(index.name).ifExists().execute();
}
