import type { Kysely } from 'kysely';

/*
 * Stopping a call (POST /v1/calls/{id}/cancel, issue 40).
 *
 * `calls.cancel_requested_at` is when the provider agreed to end the call; a second cancel finds it and asks
 * the provider nothing more. `calls.provider_control` is what a provider gave at the call's creation for
 * ending it later (Vapi's `monitor.controlUrl`), kept as given and used as given; null where the provider
 * needs nothing (Retell, the simulator) or gave nothing (then it is read from the provider's call).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('calls').addColumn('cancel_requested_at', 'text').execute();
  await db.schema.alterTable('calls').addColumn('provider_control', 'text').execute();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('calls').dropColumn('provider_control').execute();
  await db.schema.alterTable('calls').dropColumn('cancel_requested_at').execute();
}
