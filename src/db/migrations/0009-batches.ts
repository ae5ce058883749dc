import { sql, type Kysely } from 'kysely';

/*
 * Batches: many calls from one request (src/features/batches). A batch row and one row per recipient; each
 * placed recipient is an ordinary call that carries its batch and the recipient's reference.
 *
 * Webhook endpoints: `["*"]` meant "both call events" when those were the only types. It now means every
 * type, batch.completed included; the endpoints made before keep exactly the two they received.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('batches')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('api_key_id', 'text', (c) => c.notNull().references('api_keys.id'))
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('agent_id', 'text', (c) => c.notNull())
    .addColumn('agent_ref', 'text', (c) => c.notNull().references('agents.id'))
    .addColumn('name', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('scheduled_at', 'text', (c) => c.notNull())
    .addColumn('max_concurrency', 'integer', (c) => c.notNull())
    .addColumn('total', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('completed_at', 'text')
    .execute();
  // GET /v1/batches: an account's batches newest first, and the cursor's place in that order.
  await db.schema.createIndex('batches_account_created_at_idx').on('batches').columns(['account_id', 'created_at', 'id']).execute();
  // The dialer's look for batches whose time has come.
  await db.schema.createIndex('batches_due_idx').on('batches').columns(['status', 'scheduled_at']).execute();

  // No foreign key to batches: the recipients are written first and the batch row last, with the
  // completion of its Idempotency-Key (completeKey, in the transaction that stores the batch), so the batch appears whole or not at all.
  await db.schema
    .createTable('batch_recipients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('batch_id', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('reference', 'text')
    .addColumn('metadata', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('failure_message', 'text')
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('deferrals', 'integer', (c) => c.notNull())
    .addColumn('locked_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The recipients in the order sent (GET …/recipients and its cursor).
  await db.schema.createIndex('batch_recipients_position_idx').on('batch_recipients').columns(['batch_id', 'position']).unique().execute();
  // The dialer's claim (a batch's queued recipients in order), its count of dialing and in-progress ones,
  // the counts by state, and the list filtered by state.
  await db.schema.createIndex('batch_recipients_status_idx').on('batch_recipients').columns(['batch_id', 'status', 'position']).execute();
  // A call's end finds its recipient.
  await db.schema.createIndex('batch_recipients_call_idx').on('batch_recipients').column('call_id').execute();
  // Dialing leases that ran out (a worker died mid-dial): few rows at any time, so a partial index.
  await db.schema
    .createIndex('batch_recipients_lease_idx')
    .on('batch_recipients')
    .column('locked_until')
    .where(sql.ref('status'), '=', 'dialing')
    .execute();

  await db.schema.alterTable('calls').addColumn('batch_id', 'text').execute();
  await db.schema.alterTable('calls').addColumn('reference', 'text').execute();

  await db
    .updateTable('webhook_endpoints')
    .set({ event_types: JSON.stringify(['call.completed', 'call.failed']) })
    .where('event_types', '=', JSON.stringify(['*']))
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db
    .updateTable('webhook_endpoints')
    .set({ event_types: JSON.stringify(['*']) })
    .where('event_types', '=', JSON.stringify(['call.completed', 'call.failed']))
    .execute();
  await db.schema.alterTable('calls').dropColumn('reference').execute();
  await db.schema.alterTable('calls').dropColumn('batch_id').execute();
  await db.schema.dropTable('batch_recipients').ifExists().execute();
  await db.schema.dropTable('batches').ifExists().execute();
}
