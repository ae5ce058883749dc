/**
 * Idempotency is a capability of any creating POST route, not of POST /v1/calls alone: a test-only route
 * that creates "widgets" in a table of its own gets the whole of spec 2.5 / 4.1 rule 3 from one line of
 * route config (`idempotency: true`) and its service's one transaction (the widget and `completeKey`), on
 * both databases.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import type { Db } from '../../src/db/database.js';
import { ApiError } from '../../src/errors/api-error.js';
import { completeKey, type HeldKey, type StoredResponse } from '../../src/features/idempotency/idempotency.service.js';
import apiAuth, { refuseWithoutApiKey } from '../../src/http/api-auth.plugin.js';
import idempotency from '../../src/http/idempotency.plugin.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

interface WidgetRow {
  id: string;
  name: string;
}

const WidgetBody = Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false });

let nextWidget = 0;

/** The widgets' service: it refuses a name by a rule of its own, else stores the widget and completes the key together. */
async function createWidget(db: Db, name: string, key: HeldKey | null): Promise<StoredResponse> {
  if (name === 'refused') throw new ApiError('invalid_request', 'This name is refused by a rule of the service.', { param: 'name' });
  // 'taken' always gets the same id, so its second insert fails: neither it nor the key's completion stays.
  const row = { id: name === 'taken' ? 'widget_taken' : `widget_${++nextWidget}`, name };
  const response = { status: 201, body: row, headers: { location: `/test/widgets/${row.id}` } };
  await db.transaction().execute(async (trx) => {
    await (trx as unknown as Kysely<{ widgets: WidgetRow }>).insertInto('widgets').values(row).execute();
    if (key) await completeKey(trx, key, response);
  });
  return response;
}

await forEachDialect('Idempotency as a capability of any creating route', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, {
      register: (app, services) =>
        app.register(
          async (scope) => {
            await scope.register(apiAuth, services);
            scope.addHook('onRequest', refuseWithoutApiKey);
            await scope.register(idempotency, services.calls);
            // The one line that makes the route idempotent: `config: { idempotency: true }`.
            scope.post('/widgets', { schema: { body: WidgetBody }, config: { idempotency: true } }, async (request, reply) => {
              const created = await createWidget(services.db, (request.body as { name: string }).name, request.idempotencyKey);
              return reply.code(201).headers(created.headers).send(created.body);
            });
          },
          { prefix: '/test' },
        ),
    });

    await t.services.db.schema
      .createTable('widgets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .execute();
  });
  after(async () => t.close());

  const post = (body: unknown, idempotencyKey?: string) =>
    t.inject({
      method: 'POST',
      url: '/test/widgets',
      headers: {
        authorization: `Bearer ${t.seed.token}`,
        'content-type': 'application/json',
        ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
      payload: JSON.stringify(body),
    });
  const widgets = async () =>
    (
      await t.services.db
        .selectFrom('widgets' as never)
        .selectAll()
        .execute()
    ).length;
  const keyRecord = (key: string) =>
    t.services.db
      .selectFrom('idempotency_keys')
      .select(['state', 'response_status'])
      .where('route', '=', 'POST /test/widgets')
      .where('idempotency_key', '=', key)
      .executeTakeFirst();

  it('the same key and body replay the first 201 with Idempotent-Replayed, and create nothing more', async () => {
    const first = await post({ name: 'one' }, 'w-replay');
    assert.equal(first.statusCode, 201, first.body);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    const count = await widgets();
    const second = await post({ name: 'one' }, 'w-replay');
    assert.equal(second.statusCode, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.deepEqual(second.json(), first.json());
    assert.equal(second.headers.location, first.headers.location);
    assert.equal(await widgets(), count);
    assert.deepEqual(await keyRecord('w-replay'), { state: 'completed', response_status: 201 });
  });

  it('the same key with another body is 409, even when that body breaks the schema or a rule of the service', async () => {
    await post({ name: 'two' }, 'w-conflict');
    for (const body of [{ name: 'three' }, { name: '' }, { name: 'two', extra: true }, { name: 'refused' }]) {
      const res = await post(body, 'w-conflict');
      assert.equal(res.statusCode, 409, JSON.stringify(body));
      assert.equal(res.json().error, 'idempotency_conflict');
    }
  });

  it('an invalid key is 400 invalid_idempotency_key; a broken body with an unused key gets its own 400', async () => {
    const invalid = await post({ name: 'four' }, 'has space');
    assert.equal(invalid.statusCode, 400);
    assert.equal(invalid.json().error, 'invalid_idempotency_key');
    const broken = await post({ name: '' }, 'w-broken');
    assert.equal(broken.statusCode, 400);
    assert.equal(broken.json().error, 'invalid_request');
    assert.equal(await keyRecord('w-broken'), undefined);
  });

  it('a failure stores nothing and frees the key, and the resource and its key are stored both or neither', async () => {
    const refused = await post({ name: 'refused' }, 'w-refused');
    assert.equal(refused.statusCode, 400);
    assert.equal(await keyRecord('w-refused'), undefined);

    assert.equal((await post({ name: 'taken' }, 'w-taken-1')).statusCode, 201);
    const count = await widgets();
    const failed = await post({ name: 'taken' }, 'w-taken-2'); // its insert fails on the id
    assert.equal(failed.statusCode, 500);
    assert.equal(await widgets(), count);
    assert.equal(await keyRecord('w-taken-2'), undefined);
  });

  it('a key is scoped to its route: the same key on POST /v1/calls starts its own operation', async () => {
    assert.equal((await post({ name: 'five' }, 'w-shared')).statusCode, 201);
    const call = await t.createCall(callBody(t), { idempotencyKey: 'w-shared' });
    assert.equal(call.statusCode, 201);
    assert.equal(call.headers['idempotent-replayed'], undefined);
  });

  it('requests without a key are never deduplicated', async () => {
    const count = await widgets();
    assert.equal((await post({ name: 'six' })).statusCode, 201);
    assert.equal((await post({ name: 'six' })).statusCode, 201);
    assert.equal(await widgets(), count + 2);
  });

  it('a failure frees the key before its answer is sent: an immediate retry with the key is processed anew', async () => {
    assert.equal((await post({ name: 'refused' }, 'w-retry')).statusCode, 400);
    const retried = await post({ name: 'refused' }, 'w-retry');
    assert.equal(retried.statusCode, 400);
    assert.equal(retried.json().error, 'invalid_request');
  });
});
