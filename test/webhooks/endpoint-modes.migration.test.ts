/**
 * The upgrade to endpoint modes (migration 0024) on data made before it: an existing endpoint becomes live,
 * stored envelopes gain `livemode` before their `data` (the first `"data":`, not one inside it), and a
 * test-mode delivery still pending to the now-live endpoint ends as failed instead of reaching it later.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { migrateToLatest, openDatabase } from '../../src/db/database.js';
import * as callFiltersMigration from '../../src/db/migrations/0025-call-filters.js';
import * as endpointModesMigration from '../../src/db/migrations/0024-endpoint-modes.js';
import { forEachDialect } from '../support/dialects.js';
import { createTestDatabase } from '../support/test-database.js';

await forEachDialect('Upgrading to endpoint modes (migration 0024)', (dialect) => {
  it('makes old endpoints live, marks old events, and ends test deliveries pending to them', async () => {
    const database = await createTestDatabase(dialect);
    const handle = openDatabase(database.config);
    try {
      await migrateToLatest(handle.db);
      await callFiltersMigration.down(handle.db);
      await endpointModesMigration.down(handle.db);
      const at = '2026-01-01T00:00:00.000Z';
      const db = handle.db;
      await db.insertInto('accounts').values({ id: 'acct_old', name: 'Old', created_at: at }).execute();
      await db
        .insertInto('webhook_endpoints')
        .values({
          id: 'we_old',
          account_id: 'acct_old',
          url: 'https://hooks.example.com/x',
          description: '',
          enabled: 1,
          event_types: '["*"]',
          secret: 'whsec_x',
          previous_secret: null,
          previous_secret_expires_at: null,
          disabled_reason: null,
          failing_since: null,
          created_at: at,
          updated_at: at,
          deleted_at: null,
        } as never)
        .execute();
      // Its data holds an "analysis" whose own "data" comes first in the text after the envelope's keys.
      const envelope = (id: string, type: string) =>
        `{"id":"${id}","type":"${type}","created_at":"${at}","data":{"id":"call_x","analysis":{"successful":true,"data":{"k":"v"}}}}`;
      await db
        .insertInto('webhook_events')
        .values([
          {
            id: 'evt_live',
            account_id: 'acct_old',
            type: 'call.completed',
            call_id: null,
            mode: 'live',
            payload: envelope('evt_live', 'call.completed'),
            created_at: at,
          },
          {
            id: 'evt_test',
            account_id: 'acct_old',
            type: 'call.completed',
            call_id: null,
            mode: 'test',
            payload: envelope('evt_test', 'call.completed'),
            created_at: at,
          },
        ])
        .execute();
      const delivery = (id: string, eventId: string, mode: 'live' | 'test') => ({
        id,
        event_id: eventId,
        endpoint_id: 'we_old',
        account_id: 'acct_old',
        mode,
        status: 'pending' as const,
        trigger: 'event' as const,
        attempt_count: 1,
        next_attempt_at: at,
        locked_by: null,
        locked_until: null,
        last_attempt_at: at,
        last_status_code: 500,
        last_error: 'HTTP 500',
        created_at: at,
        updated_at: at,
      });
      await db
        .insertInto('webhook_deliveries')
        .values([delivery('dlv_live', 'evt_live', 'live'), delivery('dlv_test', 'evt_test', 'test')])
        .execute();

      await endpointModesMigration.up(db);

      const endpoint = await db.selectFrom('webhook_endpoints').select(['mode', 'created_by_key_id']).executeTakeFirstOrThrow();
      assert.deepEqual(endpoint, { mode: 'live', created_by_key_id: null });
      const events = await db.selectFrom('webhook_events').select(['id', 'payload']).orderBy('id').execute();
      assert.deepEqual(
        events.map((event) => JSON.parse(event.payload)),
        [
          {
            id: 'evt_live',
            type: 'call.completed',
            created_at: at,
            livemode: true,
            data: { id: 'call_x', analysis: { successful: true, data: { k: 'v' } } },
          },
          {
            id: 'evt_test',
            type: 'call.completed',
            created_at: at,
            livemode: false,
            data: { id: 'call_x', analysis: { successful: true, data: { k: 'v' } } },
          },
        ],
      );
      assert.ok(events[0]!.payload.startsWith(`{"id":"evt_live","type":"call.completed","created_at":"${at}","livemode":true,"data":`));
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select(['id', 'status', 'next_attempt_at', 'last_error'])
        .orderBy('id')
        .execute();
      assert.equal(deliveries[0]!.status, 'pending', 'the live delivery is still retried');
      assert.equal(deliveries[1]!.status, 'failed');
      assert.equal(deliveries[1]!.next_attempt_at, null);
      assert.match(deliveries[1]!.last_error ?? '', /became a live endpoint/);
    } finally {
      await handle.destroy();
      await database.drop();
    }
  });
});
