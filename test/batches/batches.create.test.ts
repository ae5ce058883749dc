/**
 * POST /v1/batches on both databases: the batch it answers, every rule of its body with the place of the
 * fault in `param` (and nothing stored when refused), the 10 MB body limit of this route only, the
 * Idempotency-Key rules of POST /v1/calls, and test and live data kept apart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createApiKey } from '../../src/features/api-keys/api-keys.service.js';
import { forEachDialect } from '../support/dialects.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { apiGet, batchFields, createBatch, numbers, postBatch, readBatch, recipientsFor } from '../support/batch-client.js';

await forEachDialect('POST /v1/batches', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect);
  });
  after(async () => t.close());

  const stored = async () => {
    const count = async (table: 'batches' | 'batch_recipients') =>
      Number(
        (
          await t.services.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<string | number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    return { batches: await count('batches'), recipients: await count('batch_recipients') };
  };

  it('answers 201 with the batch, its Location, every recipient queued; GET shows the same batch', async () => {
    const res = await postBatch(t, {
      agent_id: t.seed.agentId,
      name: 'Reminders',
      max_concurrency: 7,
      recipients: recipientsFor(numbers(3)),
    });
    assert.equal(res.statusCode, 201, res.body);
    const batch = res.json();
    assert.match(batch.id, /^batch_[0-9a-z]{26}$/);
    assert.equal(res.headers.location, `/v1/batches/${batch.id}`);
    assert.equal(batch.agent_id, t.seed.agentId);
    assert.equal(batch.name, 'Reminders');
    assert.equal(batch.status, 'running');
    assert.equal(batch.max_concurrency, 7);
    assert.deepEqual(batch.counts, { total: 3, queued: 3, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 0 });
    assert.equal(batch.completed_at, null);
    assert.equal(batch.scheduled_at, batch.created_at);
    assert.deepEqual(Object.keys(batch).sort(), batchFields);
    // The seeded key is live: the batch and each recipient say so.
    assert.equal(batch.livemode, true);
    assert.equal(batch.calling_window, null);
    assert.equal(batch.retry, null);
    assert.deepEqual(await readBatch(t, batch.id), batch);

    const recipients = (await apiGet(t, `/v1/batches/${batch.id}/recipients`)).json().data;
    assert.deepEqual(
      recipients.map((r: Record<string, unknown>) => [r.to, r.reference, r.status]),
      numbers(3).map((to, index) => [to, `ref-${index}`, 'queued']),
    );
    assert.match(recipients[0].id, /^rcp_[0-9a-z]{26}$/);
    assert.ok(recipients.every((recipient: { livemode: boolean }) => recipient.livemode === true));
    assert.deepEqual(recipients[1].metadata, { customer_name: 'Customer 1', n: 1 });
    assert.deepEqual(Object.keys(recipients[0]).sort(), [
      'attempts',
      'call_ids',
      'id',
      'last_failure_message',
      'last_failure_reason',
      'livemode',
      'metadata',
      'next_attempt_at',
      'reference',
      'status',
      'to',
      'updated_at',
    ]);
    assert.deepEqual(
      [recipients[0].attempts, recipients[0].call_ids, recipients[0].next_attempt_at, recipients[0].last_failure_reason],
      [0, [], batch.scheduled_at, null],
    );
  });

  it('takes the defaults: no name, max_concurrency 5, start now; a scheduled_at ahead makes it scheduled, in UTC', async () => {
    const plain = await createBatch(t, numbers(1), {}, {});
    assert.equal(plain.name, null);
    assert.equal(plain.max_concurrency, 5);
    const ahead = new Date(t.services.clock.now().getTime() + 2 * 3600_000);
    // The same instant written in UTC+01:00: its wall-clock time is an hour later (the next day near midnight).
    const local = `${new Date(ahead.getTime() + 3600_000).toISOString().slice(0, 19)}+01:00`;
    const scheduled = await createBatch(t, numbers(1), { scheduled_at: local });
    assert.equal(scheduled.status, 'scheduled');
    assert.equal(Date.parse(scheduled.scheduled_at), Date.parse(local));
    assert.match(scheduled.scheduled_at, /Z$/);
    const nearlyNow = await createBatch(t, numbers(1), { scheduled_at: new Date(t.services.clock.now().getTime() - 30_000).toISOString() });
    assert.equal(nearlyNow.status, 'running');
  });

  describe('faults, each named by its place and nothing stored', () => {
    const base = () => ({ agent_id: t.seed.agentId, recipients: recipientsFor(numbers(20)) });
    const withRecipient = (index: number, change: Record<string, unknown>) => {
      const body = base();
      body.recipients[index] = { ...body.recipients[index]!, ...change } as (typeof body.recipients)[number];
      return body;
    };
    const now = () => t.services.clock.now().getTime();
    const cases: [string, () => unknown, string | undefined, RegExp][] = [
      ['a number not in E.164', () => withRecipient(17, { to: '4155550123' }), 'recipients[17].to', /E\.164/],
      [
        'a recipient without to',
        () => ({ ...base(), recipients: [{ to: '+14155550100' }, { reference: 'x' }] }),
        'recipients[1].to',
        /Missing required field/,
      ],
      ['an unknown field of a recipient', () => withRecipient(3, { phone: '+1' }), 'recipients[3].phone', /Unknown field/],
      [
        'a number twice',
        () => withRecipient(12, { to: numbers(20)[4] }),
        'recipients[12].to',
        /already in the batch at recipients\[4\]\.to/,
      ],
      ['metadata over 5 KB', () => withRecipient(2, { metadata: { pad: 'x'.repeat(5200) } }), 'recipients[2].metadata', /at most 5120/],
      [
        'a metadata key over 64 characters',
        () => withRecipient(5, { metadata: { ['k'.repeat(65)]: 1 } }),
        'recipients[5].metadata',
        /64 characters/,
      ],
      [
        'a metadata value that is an object',
        () => withRecipient(6, { metadata: { a: { b: 1 } } }),
        'recipients[6].metadata.a',
        /a string, a number, a boolean or null/,
      ],
      ['an empty reference', () => withRecipient(0, { reference: '' }), 'recipients[0].reference', /fewer than 1 characters/],
      [
        'a reference over 255 characters',
        () => withRecipient(9, { reference: 'r'.repeat(256) }),
        'recipients[9].reference',
        /more than 255/,
      ],
      ['no recipients', () => ({ ...base(), recipients: [] }), 'recipients', /at least 1 items/],
      ['recipients not a list', () => ({ ...base(), recipients: { to: '+14155550100' } }), 'recipients', /must be an array/],
      ['a name over 200 characters', () => ({ ...base(), name: 'n'.repeat(201) }), 'name', /more than 200/],
      // As for a reference: "" is refused, not stored as a name nor taken for none.
      ['an empty name', () => ({ ...base(), name: '' }), 'name', /fewer than 1 characters/],
      ['max_concurrency 0', () => ({ ...base(), max_concurrency: 0 }), 'max_concurrency', />= 1/],
      ['max_concurrency 1001', () => ({ ...base(), max_concurrency: 1001 }), 'max_concurrency', /<= 1000/],
      ['max_concurrency 2.5', () => ({ ...base(), max_concurrency: 2.5 }), 'max_concurrency', /integer/],
      ['scheduled_at without a zone', () => ({ ...base(), scheduled_at: '2030-01-01T09:00:00' }), 'scheduled_at', /time zone/],
      ['scheduled_at on 30 February', () => ({ ...base(), scheduled_at: '2030-02-30T09:00:00Z' }), 'scheduled_at', /ISO 8601/],
      [
        'scheduled_at over a minute ago',
        () => ({ ...base(), scheduled_at: new Date(now() - 90_000).toISOString() }),
        'scheduled_at',
        /in the past/,
      ],
      [
        'scheduled_at over 30 days ahead',
        () => ({ ...base(), scheduled_at: new Date(now() + 31 * 86_400_000).toISOString() }),
        'scheduled_at',
        /30 days/,
      ],
      ['an unknown top-level field', () => ({ ...base(), callback: 'x' }), 'callback', /Unknown field/],
      ['a NUL in a recipient', () => withRecipient(1, { metadata: { note: 'a\u0000b' } }), 'recipients[1].metadata.note', /NUL/],
      // A lone surrogate is no character: stored, it came back as U+FFFD (one on PostgreSQL, three on SQLite).
      ['a lone surrogate in a reference', () => withRecipient(3, { reference: 'a\ud800' }), 'recipients[3].reference', /surrogate/],
      ['a lone surrogate in a metadata key', () => withRecipient(4, { metadata: { '\udc00k': 1 } }), 'recipients[4].metadata', /surrogate/],
      ['a lone surrogate in the name', () => ({ ...base(), name: '\udbff' }), 'name', /surrogate/],
      [
        'a number that would not read back',
        () => `{"agent_id":"${t.seed.agentId}","recipients":[{"to":"+14155550100","metadata":{"n":12345678901234567890}}]}`,
        'recipients[0].metadata.n',
        /read back/,
      ],
    ];
    for (const [what, body, param, message] of cases) {
      it(`400 invalid_request for ${what}`, async () => {
        const before = await stored();
        const res = await postBatch(t, body());
        assert.equal(res.statusCode, 400, res.body);
        assert.equal(res.json().error, 'invalid_request');
        assert.equal(res.json().param, param);
        assert.match(res.json().message, message);
        assert.deepEqual(await stored(), before);
      });
    }

    it("403 agent_not_found for another account's agent, naming agent_id", async () => {
      const other = await t.newAccount({ agentId: 'agent_elsewhere' });
      const res = await postBatch(t, { agent_id: other.agentId, recipients: recipientsFor(numbers(2)) });
      assert.equal(res.statusCode, 403, res.body);
      assert.equal(res.json().error, 'agent_not_found');
      assert.equal(res.json().param, 'agent_id');
    });
  });

  describe('sizes', () => {
    it('takes 10,000 recipients (with metadata, over 64 KB) and refuses 10,001', async () => {
      const tos = Array.from({ length: 10_001 }, (_, index) => `+1650${String(1_000_000 + index)}`);
      const big = { agent_id: t.seed.agentId, recipients: recipientsFor(tos) };
      const tooMany = await postBatch(t, big);
      assert.equal(tooMany.statusCode, 400, tooMany.body);
      assert.equal(tooMany.json().param, 'recipients');
      assert.match(tooMany.json().message, /at most 10,000 items/);
      const res = await postBatch(t, { ...big, recipients: big.recipients.slice(0, 10_000) });
      assert.equal(res.statusCode, 201, res.body);
      assert.equal(res.json().counts.total, 10_000);
      const last = (await apiGet(t, `/v1/batches/${res.json().id}/recipients?limit=1&status=queued`)).json();
      assert.equal(last.data[0].to, tos[0]);
    });

    it('refuses a body over 10 MB with 413 naming that limit; POST /v1/calls keeps its 64 KB', async () => {
      const body = JSON.stringify({
        agent_id: t.seed.agentId,
        recipients: [{ to: '+14155550100', metadata: { pad: 'x'.repeat(10 * 1024 * 1024) } }],
      });
      const res = await postBatch(t, body);
      assert.equal(res.statusCode, 413, res.body);
      assert.equal(res.json().error, 'payload_too_large');
      assert.equal(res.json().message, 'The request body is larger than 10 MB.');
      const call = await t.createCall(
        JSON.stringify({ agent_id: t.seed.agentId, to: '+14155550100', metadata: { pad: 'x'.repeat(70 * 1024) } }),
      );
      assert.equal(call.statusCode, 413);
      assert.equal(call.json().message, 'The request body is larger than 64 KB.');
    });
  });

  describe('Idempotency-Key', () => {
    const body = () => ({ agent_id: t.seed.agentId, recipients: recipientsFor(numbers(4, 5000)) });

    it('replays the first answer for the same body, with Idempotent-Replayed and no second batch', async () => {
      const first = await postBatch(t, body(), { idempotencyKey: 'batch-key-1' });
      assert.equal(first.statusCode, 201, first.body);
      const before = await stored();
      const again = await postBatch(t, { recipients: body().recipients, agent_id: t.seed.agentId }, { idempotencyKey: 'batch-key-1' });
      assert.equal(again.statusCode, 201);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      assert.equal(again.headers.location, first.headers.location);
      assert.deepEqual(again.json(), first.json());
      assert.deepEqual(await stored(), before);
    });

    it('409 idempotency_conflict for another body with the key, even a body that breaks the schema', async () => {
      await postBatch(t, body(), { idempotencyKey: 'batch-key-2' });
      const before = await stored();
      const other = await postBatch(t, { ...body(), name: 'other' }, { idempotencyKey: 'batch-key-2' });
      assert.equal(other.statusCode, 409);
      assert.equal(other.json().error, 'idempotency_conflict');
      const broken = await postBatch(t, { ...body(), max_concurrency: 0 }, { idempotencyKey: 'batch-key-2' });
      assert.equal(broken.statusCode, 409);
      assert.deepEqual(await stored(), before);
    });

    it('a refused request releases its key: the corrected one with the same key is created', async () => {
      const refused = await postBatch(t, { ...body(), scheduled_at: 'tomorrow' }, { idempotencyKey: 'batch-key-3' });
      assert.equal(refused.statusCode, 400);
      const before = await stored();
      const created = await postBatch(t, { ...body(), scheduled_at: 'tomorrow' }, { idempotencyKey: 'batch-key-3' });
      assert.equal(created.statusCode, 400, 'the same faulty body is refused again, not replayed');
      const fixed = await postBatch(t, body(), { idempotencyKey: 'batch-key-3' });
      assert.equal(fixed.statusCode, 201, fixed.body);
      assert.deepEqual(await stored(), { batches: before.batches + 1, recipients: before.recipients + 4 });
    });

    it('a key is scoped to its route: the same key on POST /v1/calls is another operation', async () => {
      const batch = await postBatch(t, body(), { idempotencyKey: 'shared-key' });
      const call = await t.createCall({ agent_id: t.seed.agentId, to: '+14155550123' }, { idempotencyKey: 'shared-key' });
      assert.equal(batch.statusCode, 201);
      assert.equal(call.statusCode, 201, call.body);
    });

    it('400 invalid_idempotency_key for a key with a space', async () => {
      const res = await postBatch(t, body(), { idempotencyKey: 'has space' });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error, 'invalid_idempotency_key');
    });
  });

  it('keeps test and live apart, and other accounts out: 404 not_found', async () => {
    const live = await createBatch(t, numbers(2));
    const testKey = await createApiKey(t.services.db, t.services.clock, { accountId: t.seed.accountId, name: 'test', mode: 'test' });
    const testBatch = await createBatch(t, numbers(2), {}, { token: testKey.token });
    const other = await t.newAccount({ agentId: 'agent_other_account' });
    for (const [id, token] of [
      [live.id, testKey.token],
      [testBatch.id, t.seed.token],
      [live.id, other.token],
    ] as const) {
      for (const url of [`/v1/batches/${id}`, `/v1/batches/${id}/recipients`]) {
        const res = await apiGet(t, url, token);
        assert.equal(res.statusCode, 404, `${url}: ${res.body}`);
        assert.equal(res.json().error, 'not_found');
      }
    }
    const testList = (await apiGet(t, '/v1/batches?limit=100', testKey.token)).json().data.map((b: { id: string }) => b.id);
    assert.deepEqual(testList, [testBatch.id]);
    const liveList = (await apiGet(t, '/v1/batches?limit=100')).json().data.map((b: { id: string }) => b.id);
    assert.ok(liveList.includes(live.id) && !liveList.includes(testBatch.id));
  });
});
