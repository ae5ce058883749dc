/**
 * Idempotency is a capability of any creating POST route, not of POST /v1/calls alone: a test-only route
 * that creates "widgets" in a table of its own gets the whole of spec 2.5 / 4.1 rule 3 from one line
 * (withIdempotency) and its service's one store (hold.insertCompleting), on both databases.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import type { InsertStatement, SelectStatement } from '../../src/db/prepared.js';
import { ApiError } from '../../src/errors/api-error.js';
import { apiAuthHook } from '../../src/features/api-keys/api-auth.hook.js';
import { withIdempotency } from '../../src/features/idempotency/idempotency.hook.js';
import { completionParams, insertCompletingKey, insertInFlightWithRead } from '../../src/features/idempotency/idempotency.repository.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, startTestApp, type TestApp } from '../support/test-app.js';

interface WidgetRow {
  id: string;
  name: string;
}

// The table is the test's own, so the app's Database type does not know it.
const widgetInsert: InsertStatement<WidgetRow> = function insertWidget(db, p) {
  return (db as unknown as Kysely<{ widgets: WidgetRow }>).insertInto('widgets').values({ id: p.id, name: p.name });
};

// A read the route needs whichever way the claim goes (as POST /v1/calls reads its agent): the widget named so.
const widgetByName: SelectStatement<{ name: string }, WidgetRow> = function widgetByName(db, p) {
  return (db as unknown as Kysely<{ widgets: WidgetRow }>).selectFrom('widgets').select(['id', 'name']).where('name', '=', p.name);
};

const WidgetBody = Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false });

let nextWidget = 0;

await forEachDialect('Idempotency as a capability of any creating route', (dialect) => {
  let t: TestApp;
  before(async () => {
    t = await startTestApp(dialect, {
      register: (app, services) =>
        app.register(
          async (scope) => {
            scope.addHook('onRequest', apiAuthHook(services));
            scope.post('/widgets', { schema: { body: WidgetBody }, attachValidation: true }, async (request, reply) =>
              // The one line that makes the route idempotent:
              withIdempotency(services.calls, 'POST /test/widgets', request, reply, async (hold) => {
                const { name } = request.body as { name: string };
                if (name === 'refused')
                  throw new ApiError('invalid_request', 'This name is refused by a rule of the service.', { param: 'name' });
                // 'taken' always gets the same id, so its second insert fails: neither it nor the key's completion stays.
                const row = { id: name === 'taken' ? 'widget_taken' : `widget_${++nextWidget}`, name };
                const response = { status: 201, body: row, headers: { location: `/test/widgets/${row.id}` } };
                if (hold) await hold.insertCompleting(widgetInsert, row, response);
                else await widgetInsert(services.db, row).execute();
                return reply.code(201).headers(response.headers).send(row);
              }),
            );
            // A second route whose handler gets the rows of its read, run with the key's claim.
            scope.post('/named-widgets', { schema: { body: WidgetBody }, attachValidation: true }, async (request, reply) => {
              const { name } = request.body as { name: string };
              return withIdempotency(
                services.calls,
                'POST /test/named-widgets',
                request,
                reply,
                async (hold, rows) => {
                  const response = { status: 201, body: { found: rows }, headers: {} };
                  const copy = { id: `widget_${++nextWidget}`, name: `copy of ${name}` };
                  if (hold) await hold.insertCompleting(widgetInsert, copy, response);
                  return reply.code(201).send(response.body);
                },
                { statement: widgetByName, params: { name } },
              );
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

  const post = (body: unknown, idempotencyKey?: string, url = '/test/widgets') =>
    t.inject({
      method: 'POST',
      url,
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

  it("a resource whose parameters take a name of the key's completion is refused before anything runs", async () => {
    const clashing: InsertStatement<{ id: string; key: string }> = function insertClashingWidget(db, p) {
      return (db as unknown as Kysely<{ widgets: WidgetRow }>).insertInto('widgets').values({ id: p.id, name: p.key });
    };
    const completion = completionParams({ apiKeyId: t.seed.keyId, route: 'POST /test/widgets', key: 'w-clash' }, 'owner', {
      status: 201,
      body: '{}',
      headers: '{}',
      expiresAt: '2030-01-01T00:00:00.000Z',
    });
    await assert.rejects(insertCompletingKey(t.services.db, clashing, { id: 'widget_clash', key: 'x' }, completion), /parameter key/);
    assert.equal(
      (
        await t.services.db
          .selectFrom('widgets' as never)
          .selectAll()
          .where('id' as never, '=', 'widget_clash' as never)
          .execute()
      ).length,
      0,
    );
  });

  it("a route's read runs with the key's claim and its rows reach the handler, with a key and without one", async () => {
    await post({ name: 'to-be-found' }, 'w-read-source');
    const postNamed = (body: unknown, idempotencyKey?: string) => post(body, idempotencyKey, '/test/named-widgets');
    const withKey = await postNamed({ name: 'to-be-found' }, 'w-read-1');
    assert.equal(withKey.statusCode, 201, withKey.body);
    assert.deepEqual(
      withKey.json().found.map((row: WidgetRow) => row.name),
      ['to-be-found'],
    );
    const withoutKey = await postNamed({ name: 'to-be-found' });
    assert.deepEqual(
      withoutKey.json().found.map((row: WidgetRow) => row.name),
      ['to-be-found'],
    );
    const none = await postNamed({ name: 'nobody' }, 'w-read-2');
    assert.deepEqual(none.json().found, []);
    // A replay answers the first response: the read's rows of the time of the first request.
    await post({ name: 'to-be-found' }, 'w-read-source-2');
    const replay = await postNamed({ name: 'to-be-found' }, 'w-read-1');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.deepEqual(replay.json(), withKey.json());
  });

  // On PostgreSQL the read is compiled into the claim's statement, where a shared name would get one value.
  if (dialect === 'postgres')
    it("a read whose parameters take a name of the claim's is refused before anything runs", async () => {
      const clashing: SelectStatement<{ route: string }, WidgetRow> = function clashingRead(db, p) {
        return (db as unknown as Kysely<{ widgets: WidgetRow }>).selectFrom('widgets').select(['id', 'name']).where('name', '=', p.route);
      };
      const row = {
        api_key_id: t.seed.keyId,
        route: 'POST /test/named-widgets',
        idempotency_key: 'w-read-clash',
        request_hash: 'h',
        state: 'in_progress' as const,
        owner: 'o',
        response_status: null,
        response_body: null,
        response_headers: null,
        locked_until: '2030-01-01T00:00:00.000Z',
        expires_at: null,
        created_at: '2030-01-01T00:00:00.000Z',
      };
      if (dialect === 'postgres') {
        await assert.rejects(
          insertInFlightWithRead(t.services.db, row, { statement: clashing, params: { route: 'x' } }),
          /parameter route/,
        );
        const held = await t.services.db
          .selectFrom('idempotency_keys')
          .select('owner')
          .where('idempotency_key', '=', 'w-read-clash')
          .execute();
        assert.equal(held.length, 0);
      }
    });
});
