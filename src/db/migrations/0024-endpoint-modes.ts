import { PostgresAdapter, sql, type Kysely } from 'kysely';

/*
 * Webhook endpoints belong to one mode, as keys do: a test-mode event is delivered only to the account's
 * test endpoints, a live-mode one only to its live endpoints, so rehearsing with a test key never reaches a
 * production receiver. Endpoints made before this migration receive live events (they received both
 * before, and production is what they were made for): they become live endpoints.
 *
 * `created_by_key_id` names the API key that made an endpoint over `POST /v1/webhook_endpoints` (null for
 * one made in the portal or with the CLI): the portal and the CLI show it.
 *
 * Every event envelope now says `livemode`. The stored envelopes (each the exact bytes its deliveries sign)
 * gain it before their `data`, so that the events API and the deliveries still to be made say it too: the
 * first `"data":` of an envelope is its own (`id`, `type` and `created_at` come before it and hold none).
 *
 * A test-mode event's delivery still pending to an endpoint that is now live would reach a production
 * receiver at its next retry: it ends as failed, saying why (its event stays readable with a test key).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('webhook_endpoints')
    .addColumn('mode', 'text', (c) => c.notNull().defaultTo('live'))
    .execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('created_by_key_id', 'text').execute();
  const position =
    db.getExecutor().adapter instanceof PostgresAdapter ? sql.raw(`strpos(payload, '"data":')`) : sql.raw(`instr(payload, '"data":')`);
  await sql`
    update webhook_events
    set payload = substr(payload, 1, ${position} - 1)
      || case when mode = 'live' then '"livemode":true,' else '"livemode":false,' end
      || substr(payload, ${position})
    where ${position} > 0 and payload not like '%"livemode":%'
  `.execute(db);
  await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'failed',
      next_attempt_at: null,
      last_error: 'Not sent: its endpoint became a live endpoint, which receives no test-mode events. Add a test endpoint for them.',
      updated_at: new Date().toISOString(),
    })
    .where('status', '=', 'pending')
    .where('mode', '=', 'test')
    .execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').dropColumn('created_by_key_id').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('mode').execute();
}
