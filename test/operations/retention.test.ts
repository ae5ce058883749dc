/**
 * Retention jobs of the worker role, with an injected clock: old rows go, recent ones and anything with a
 * pending delivery stay, calls are never touched, and no statement deletes more than the batch size.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import type { Db } from '../../src/db/database.js';
import { idempotencyPurgeJob } from '../../src/features/idempotency/idempotency-purge.job.js';
import { sessionsPurgeJob } from '../../src/features/identity/sessions-purge.job.js';
import { formTokensPurgeJob } from '../../src/portal/form-tokens-purge.job.js';
import { requestLogPurgeJob } from '../../src/features/request-log/request-log-purge.job.js';
import { eventRetentionJob } from '../../src/features/webhook-delivery/event-retention.job.js';
import type { Job } from '../../src/jobs/job-runner.js';
import { addMs, isoTimestamp, ManualClock } from '../../src/lib/clock.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, requestLogRow, startTestApp, webhookEndpointRow, type TestApp } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

const dayMs = 24 * 60 * 60 * 1000;
const start = new Date('2026-06-01T12:00:00.000Z');
const ago = (ms: number) => isoTimestamp(addMs(start, -ms));

type Table =
  | 'request_logs'
  | 'webhook_events'
  | 'webhook_deliveries'
  | 'webhook_attempts'
  | 'idempotency_keys'
  | 'portal_sessions'
  | 'portal_form_tokens';

async function count(db: Db, table: Table): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function ids(
  db: Db,
  table: 'request_logs' | 'webhook_events' | 'webhook_deliveries' | 'webhook_attempts' | 'portal_sessions',
): Promise<string[]> {
  return (await db.selectFrom(table).select('id').orderBy('id').execute()).map((row) => row.id);
}

/** Runs passes until one says no more, and returns how many rows each pass deleted. */
async function drain(db: Db, table: Table, job: Job, now: Date): Promise<number[]> {
  const deleted: number[] = [];
  for (let pass = 0; pass < 100; pass++) {
    const before = await count(db, table);
    const result = await job.runOnce({ now, stopping: () => false });
    deleted.push(before - (await count(db, table)));
    if (!result?.more) return deleted;
  }
  throw new Error('the job never finished');
}

await forEachDialect('Retention jobs', (dialect) => {
  let t: TestApp;
  let db: Db;
  const clock = new ManualClock(start);

  before(async () => {
    t = await startTestApp(dialect, { overrides: { clock, purgeIntervalMs: 20, retentionBatchSize: 4 } });
    db = t.services.db;
  });
  after(async () => t?.close());

  const requestLog = (id: string, createdAt: string) => requestLogRow(t.seed, id, createdAt);

  const insertRequestLogs = async () => {
    const rows = [
      ...Array.from({ length: 9 }, (_, i) => requestLog(`req_old_${i}`, ago(8 * dayMs + i * 1000))),
      requestLog('req_recent_a', ago(6 * dayMs)),
      requestLog('req_recent_b', ago(dayMs)),
    ];
    await db.insertInto('request_logs').values(rows).execute();
  };

  it('the request log keeps CALLGATE_REQUEST_LOG_DAYS (7 by default), in batches of the batch size', async () => {
    await insertRequestLogs();
    const job = requestLogPurgeJob({ db, clock, days: t.services.config.requestLogDays }, 60_000, 4);
    assert.equal(t.services.config.requestLogDays, 7);
    assert.deepEqual(await drain(db, 'request_logs', job, clock.now()), [4, 4, 1]);
    assert.deepEqual(await ids(db, 'request_logs'), ['req_recent_a', 'req_recent_b']);
    // Three days: the six-day-old request goes too.
    const short = requestLogPurgeJob({ db, clock, days: 3 }, 60_000, 4);
    assert.deepEqual(await drain(db, 'request_logs', short, clock.now()), [1]);
    assert.deepEqual(await ids(db, 'request_logs'), ['req_recent_b']);
    await db.deleteFrom('request_logs').execute();
  });

  const endpointId = 'we_retention';
  const insertEvents = async () => {
    const now = isoTimestamp(start);
    await db
      .insertInto('webhook_endpoints')
      .values(webhookEndpointRow(t.seed.accountId, endpointId, 'https://example.com/hook', now))
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    const event = (id: string, createdAt: string) => ({
      id,
      account_id: t.seed.accountId,
      type: 'call.completed',
      call_id: null,
      payload: '{}',
      created_at: createdAt,
    });
    const delivery = (id: string, eventId: string, status: 'pending' | 'succeeded' | 'failed', createdAt: string) => ({
      id,
      event_id: eventId,
      endpoint_id: endpointId,
      account_id: t.seed.accountId,
      status,
      trigger: 'event' as const,
      attempt_count: 1,
      next_attempt_at: status === 'pending' ? now : null,
      locked_by: null,
      locked_until: null,
      last_attempt_at: createdAt,
      last_status_code: status === 'succeeded' ? 200 : 500,
      last_error: null,
      created_at: createdAt,
      updated_at: createdAt,
    });
    const attempt = (id: string, deliveryId: string, createdAt: string) => ({
      id,
      delivery_id: deliveryId,
      attempt_number: 1,
      url: 'https://example.com/hook',
      attempted_at: createdAt,
      status_code: 200,
      duration_ms: 5,
      response_excerpt: null,
      error: null,
    });
    const old = ago(31 * dayMs);
    const recent = ago(29 * dayMs);
    // Five old events whose deliveries all ended (one without any delivery), one old event with a delivery
    // still pending beside a failed one, and one recent finished event.
    await db
      .insertInto('webhook_events')
      .values([
        ...['evt_old_1', 'evt_old_2', 'evt_old_3', 'evt_old_4'].map((id) => event(id, old)),
        event('evt_old_none', old),
        event('evt_old_pending', old),
        event('evt_recent', recent),
      ])
      .execute();
    await db
      .insertInto('webhook_deliveries')
      .values([
        delivery('wd_old_1_ok', 'evt_old_1', 'succeeded', old),
        delivery('wd_old_1_failed', 'evt_old_1', 'failed', old),
        delivery('wd_old_2', 'evt_old_2', 'succeeded', old),
        delivery('wd_old_3', 'evt_old_3', 'failed', old),
        delivery('wd_old_4', 'evt_old_4', 'succeeded', old),
        delivery('wd_pending', 'evt_old_pending', 'pending', old),
        delivery('wd_pending_failed', 'evt_old_pending', 'failed', old),
        delivery('wd_recent', 'evt_recent', 'succeeded', recent),
      ])
      .execute();
    await db
      .insertInto('webhook_attempts')
      .values([
        attempt('wa_old_1a', 'wd_old_1_ok', old),
        attempt('wa_old_1b', 'wd_old_1_failed', old),
        attempt('wa_old_3', 'wd_old_3', old),
        attempt('wa_pending', 'wd_pending', old),
        attempt('wa_pending_failed', 'wd_pending_failed', old),
        attempt('wa_recent', 'wd_recent', recent),
      ])
      .execute();
  };

  it('events older than CALLGATE_EVENT_RETENTION_DAYS whose deliveries all ended go with their deliveries and attempts; pending and recent stay', async () => {
    const callsBefore = await countCalls(t.services);
    await insertEvents();
    assert.equal(t.services.config.eventRetentionDays, 30);
    // A row budget of 20 is 2 events per statement.
    const job = eventRetentionJob({ db, days: t.services.config.eventRetentionDays }, 60_000, 20);
    assert.deepEqual(await drain(db, 'webhook_events', job, clock.now()), [2, 2, 1]);
    assert.deepEqual(await ids(db, 'webhook_events'), ['evt_old_pending', 'evt_recent']);
    assert.deepEqual(await ids(db, 'webhook_deliveries'), ['wd_pending', 'wd_pending_failed', 'wd_recent']);
    assert.deepEqual(await ids(db, 'webhook_attempts'), ['wa_pending', 'wa_pending_failed', 'wa_recent']);
    assert.equal(await countCalls(t.services), callsBefore, 'calls are kept');

    // Its delivery ended: the old event goes at the next pass, the recent one once it is 30 days old.
    await db.updateTable('webhook_deliveries').set({ status: 'failed', next_attempt_at: null }).where('id', '=', 'wd_pending').execute();
    await drain(db, 'webhook_events', job, clock.now());
    assert.deepEqual(await ids(db, 'webhook_events'), ['evt_recent']);
    await drain(db, 'webhook_events', job, addMs(clock.now(), 2 * dayMs));
    assert.deepEqual(await ids(db, 'webhook_events'), []);
    assert.equal(await count(db, 'webhook_deliveries'), 0);
    assert.equal(await count(db, 'webhook_attempts'), 0);
  });

  it('expired idempotency records, ended portal sessions and old form tokens go; live ones stay; calls are kept', async () => {
    const created = await t.createCall(callBody(t), { idempotencyKey: 'retention-live-key' });
    assert.equal(created.statusCode, 201);
    const callsBefore = await countCalls(t.services);
    const record = (key: string, state: 'completed' | 'in_progress', lockedUntil: string, expiresAt: string | null) => ({
      api_key_id: t.seed.keyId,
      route: 'POST /v1/calls',
      idempotency_key: key,
      request_hash: 'h',
      state,
      owner: 'o',
      response_status: state === 'completed' ? 201 : null,
      response_body: state === 'completed' ? '{}' : null,
      response_headers: null,
      locked_until: lockedUntil,
      expires_at: expiresAt,
      created_at: ago(2 * dayMs),
    });
    await db
      .insertInto('idempotency_keys')
      .values([
        ...Array.from({ length: 5 }, (_, i) => record(`expired_${i}`, 'completed', ago(2 * dayMs), ago(dayMs))),
        record('abandoned', 'in_progress', ago(dayMs), null),
        record('in_flight', 'in_progress', isoTimestamp(addMs(start, 30_000)), null),
      ])
      .execute();
    const idempotencyJob = idempotencyPurgeJob({ db, clock, idempotency: t.services.calls.idempotency }, 60_000, 4);
    assert.deepEqual(await drain(db, 'idempotency_keys', idempotencyJob, clock.now()), [4, 2]);
    const kept = (await db.selectFrom('idempotency_keys').select('idempotency_key').orderBy('idempotency_key').execute()).map(
      (row) => row.idempotency_key,
    );
    // The call made just now (by the real clock, a later time than the injected one) keeps its record.
    assert.deepEqual(kept, ['in_flight', 'retention-live-key']);

    const now = isoTimestamp(start);
    await db
      .insertInto('users')
      .values({ id: 'usr_retention', account_id: t.seed.accountId, email: 'retention@example.com', password_hash: 'x', created_at: now })
      .execute();
    const session = (id: string, lastSeenAt: string, expiresAt: string) => ({
      id,
      user_id: 'usr_retention',
      account_id: t.seed.accountId,
      csrf_token: 'c',
      created_at: ago(dayMs),
      last_seen_at: lastSeenAt,
      expires_at: expiresAt,
    });
    await db
      .insertInto('portal_sessions')
      .values([
        session('ses_expired', now, ago(1000)),
        session('ses_idle', ago(13 * 60 * 60 * 1000), isoTimestamp(addMs(start, dayMs))),
        session('ses_live', ago(60_000), isoTimestamp(addMs(start, dayMs))),
      ])
      .execute();
    assert.deepEqual(await drain(db, 'portal_sessions', sessionsPurgeJob({ db }, 60_000, 4), clock.now()), [2]);
    assert.deepEqual(await ids(db, 'portal_sessions'), ['ses_live']);

    const token = (id: string, createdAt: string) => ({ token: id, account_id: t.seed.accountId, api_key_id: null, created_at: createdAt });
    await db
      .insertInto('portal_form_tokens')
      .values([token('tok_old', ago(8 * dayMs)), token('tok_recent', ago(dayMs))])
      .execute();
    assert.deepEqual(await drain(db, 'portal_form_tokens', formTokensPurgeJob({ db }, 60_000, 4), clock.now()), [1]);
    assert.deepEqual(
      (await db.selectFrom('portal_form_tokens').select('token').execute()).map((row) => row.token),
      ['tok_recent'],
    );
    assert.equal(await countCalls(t.services), callsBefore, 'calls are kept');
  });

  it('the worker runs every retention job on its runner, with the process clock and batch size', async () => {
    await insertRequestLogs();
    await insertEvents();
    const names = ['request-log-purge', 'webhook-event-retention', 'idempotency-purge', 'sessions-purge', 'portal-form-tokens-purge'];
    t.services.jobs.start(names);
    await eventually('the old request-log rows and events to go', async () =>
      // (The request of the call made above is logged too, at the real time.)
      (await ids(db, 'request_logs')).filter((id) => id.startsWith('req_old_') || id.startsWith('req_recent_')).join() ===
        'req_recent_a,req_recent_b' && (await ids(db, 'webhook_events')).join() === 'evt_old_pending,evt_recent'
        ? true
        : undefined,
    );
    assert.deepEqual(await ids(db, 'webhook_deliveries'), ['wd_pending', 'wd_pending_failed', 'wd_recent']);
  });
});
