/**
 * The OpenAPI document (GET /v1/openapi.json, docs/openapi.json) and the reference page rendered from it
 * (GET /docs): a valid OpenAPI 3.1 document that names every /v1 route, its errors with the catalogue's
 * codes, its headers and the webhooks; the committed file is the served document; the page has it all and
 * loads nothing from another site.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { errorCatalogue } from '../../src/errors/catalogue.js';
import { openApiFile } from '../../src/openapi-file.js';
import { forEachDialect } from '../support/dialects.js';
import { operationsOf } from '../support/openapi-check.js';
import { repoRoot } from '../support/repo-root.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

type Json = Record<string, any>;

const creatingPosts = ['POST /v1/calls', 'POST /v1/batches', 'POST /v1/suppressions'];

await forEachDialect('The OpenAPI document and the API reference', (dialect) => {
  let t: TestApp;
  let document: Json;
  /** `METHOD /v1/path` of every API route the app has (not its 405 answers, which take several methods). */
  const apiRoutes: string[] = [];

  before(async () => {
    t = await startTestApp(dialect, {
      register: (app) =>
        app.addHook('onRoute', (route) => {
          if (
            route.url.startsWith('/v1/') &&
            typeof route.method === 'string' &&
            route.method !== 'HEAD' &&
            route.url !== '/v1/openapi.json'
          ) {
            apiRoutes.push(`${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`);
          }
        }),
    });
    const res = await t.inject({ method: 'GET', url: '/v1/openapi.json' });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    document = res.json();
  });
  after(() => t?.close());

  it('is a valid OpenAPI 3.1 document whose schemas compile as JSON Schema 2020-12', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(document));
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
    assert.equal(document.openapi, '3.1.0');
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'doc', components: document.components });
    for (const name of Object.keys(document.components.schemas)) ajv.compile({ $ref: `doc#/components/schemas/${name}` });
  });

  it('is served without a key, and is the committed docs/openapi.json', async () => {
    const committed = fs.readFileSync(path.join(repoRoot, openApiFile), 'utf8');
    assert.equal(committed, `${JSON.stringify(document, null, 2)}\n`, `${openApiFile} is out of date: run npm run openapi`);
  });

  it('documents every /v1 route of the app, and nothing else', () => {
    assert.ok(apiRoutes.length >= 16, apiRoutes.join(', '));
    assert.deepEqual(operationsOf(document).sort(), [...apiRoutes].sort());
  });

  it('gives each operation an id, its parameters, its success and every error status with catalogue codes', () => {
    const codes = Object.keys(errorCatalogue);
    assert.deepEqual(document.components.schemas.ErrorCode.enum, codes);
    const ids = new Set<string>();
    for (const [url, methods] of Object.entries(document.paths as Json)) {
      for (const [method, operation] of Object.entries(methods as Json)) {
        const name = `${method.toUpperCase()} ${url}`;
        assert.ok(operation.operationId && !ids.has(operation.operationId), name);
        ids.add(operation.operationId);
        assert.ok(operation.summary && operation.tags?.length === 1, name);
        for (const parameter of url.match(/\{\w+\}/g) ?? []) {
          assert.ok(
            operation.parameters.some((p: Json) => p.in === 'path' && `{${p.name}}` === parameter && p.required),
            `${name} ${parameter}`,
          );
        }
        const statuses = Object.keys(operation.responses);
        assert.ok(
          statuses.some((status) => status.startsWith('2')),
          name,
        );
        for (const status of ['400', '401', '429', '500', '503']) assert.ok(statuses.includes(status), `${name} ${status}`);
        for (const [status, response] of Object.entries(operation.responses as Json)) {
          assert.ok(response.headers['X-Request-Id'], `${name} ${status}`);
          // JSON, or a binary type (a recording's audio/*).
          if (status.startsWith('2') && status !== '204')
            assert.ok(response.content['application/json']?.schema ?? response.content['audio/*']?.schema, `${name} ${status}`);
          if (Number(status) < 400) continue;
          const errorCodes = response.content['application/json'].schema.properties.error.enum as string[];
          assert.ok(errorCodes.length > 0, `${name} ${status}`);
          for (const code of errorCodes) {
            assert.equal(errorCatalogue[code as keyof typeof errorCatalogue]?.status, Number(status), `${name} ${status} ${code}`);
          }
          if (status === '429') assert.ok(response.headers['Retry-After'] && response.headers.RateLimit, name);
          if (status === '401') assert.ok(response.headers['WWW-Authenticate'], name);
        }
      }
    }
    // The security scheme carries the Authorization header; creating POSTs take an Idempotency-Key.
    assert.deepEqual(document.security, [{ apiKey: [] }]);
    assert.equal(document.components.securitySchemes.apiKey.scheme, 'bearer');
    for (const name of creatingPosts) {
      const operation = document.paths[name.split(' ')[1]!].post;
      const idempotencyKey = operation.parameters.find((p: Json) => p.in === 'header' && p.name === 'Idempotency-Key');
      assert.ok(idempotencyKey, name);
      // The rule the server applies (400 invalid_idempotency_key otherwise), so a client can check a key first.
      assert.deepEqual(
        { min: idempotencyKey.schema.minLength, max: idempotencyKey.schema.maxLength, pattern: idempotencyKey.schema.pattern },
        { min: 1, max: 255, pattern: '^[!-~]{1,255}$' },
        name,
      );
      const rule = new RegExp(idempotencyKey.schema.pattern);
      assert.ok(rule.test('order-881_!~') && rule.test('k'.repeat(255)), name);
      assert.ok(!rule.test('has space') && !rule.test('k'.repeat(256)) && !rule.test('ключ') && !rule.test(''), name);
      assert.ok(operation.responses['201'].headers['Idempotent-Replayed'], name);
      assert.ok(operation.responses['201'].headers.Location, name);
      assert.ok(operation.responses['409'].content['application/json'].schema.properties.error.enum.includes('idempotency_conflict'), name);
      assert.ok(operation.requestBody.content['application/json'].schema, name);
    }
    for (const header of ['Retry-After', 'Idempotent-Replayed', 'RateLimit', 'RateLimit-Policy', 'X-Request-Id']) {
      assert.ok(document.components.headers[header].description, header);
    }
  });

  it("describes every list's limit as the integer from 1 to 100 the server takes, written in the query string", async () => {
    const lists = Object.entries(document.paths as Json).flatMap(([url, methods]) =>
      ((methods as Json).get?.parameters ?? [])
        .filter((p: Json) => p.in === 'query' && p.name === 'limit')
        .map((p: Json) => [url, p] as const),
    );
    assert.deepEqual(lists.map(([url]) => url).sort(), [
      '/v1/agents',
      '/v1/batches',
      '/v1/batches/{id}/recipients',
      '/v1/calls',
      '/v1/events',
      '/v1/suppressions',
      '/v1/webhook_endpoints',
    ]);
    for (const [url, parameter] of lists) {
      assert.deepEqual(parameter.schema, { type: 'integer', minimum: 1, maximum: 100, default: 20 }, url);
      assert.equal(parameter.required, false, url);
    }
    // What the document says, the server does: "100" is the integer 100, 101 and text are refused.
    for (const [url, limit, status] of [
      ['/v1/calls', '100', 200],
      ['/v1/suppressions', '1', 200],
      ['/v1/events', '101', 400],
      ['/v1/batches', 'ten', 400],
    ] as const) {
      const res = await t.inject({ method: 'GET', url: `${url}?limit=${limit}`, headers: { authorization: `Bearer ${t.seed.token}` } });
      assert.equal(res.statusCode, status, `${url} ${res.body}`);
      if (status === 400) assert.deepEqual([res.json().error, res.json().param], ['invalid_request', 'limit'], url);
    }
  });

  it('bounds each path id by the length the server takes: an id one longer is simply not found', async () => {
    const headers = { authorization: `Bearer ${t.seed.token}` };
    const ids = Object.entries(document.paths as Json).flatMap(([url, methods]) =>
      Object.values(methods as Json).flatMap((operation: Json) =>
        operation.parameters.filter((p: Json) => p.in === 'path' && p.name === 'id').map((p: Json) => [url, p.schema.maxLength] as const),
      ),
    );
    assert.ok(ids.length >= 6);
    for (const [url, maxLength] of ids) assert.equal(maxLength, 100, url);
    for (const url of ['/v1/calls/{id}', '/v1/batches/{id}', '/v1/batches/{id}/recipients', '/v1/events/{id}']) {
      for (const length of [100, 101, 200]) {
        const res = await t.inject({ method: 'GET', url: url.replace('{id}', 'x'.repeat(length)), headers });
        assert.deepEqual([res.statusCode, res.json().error], [404, 'not_found'], `${url} ${length}`);
      }
    }
  });

  it('describes the webhooks: each event envelope and its signature headers', () => {
    assert.deepEqual(Object.keys(document.webhooks).sort(), ['batch.completed', 'call.completed', 'call.failed', 'webhook.test']);
    for (const [type, webhook] of Object.entries(document.webhooks as Json)) {
      const headers = webhook.post.parameters.filter((p: Json) => p.in === 'header' && p.required).map((p: Json) => p.name);
      assert.deepEqual(headers, ['webhook-id', 'webhook-timestamp', 'webhook-signature'], type);
      const ref = webhook.post.requestBody.content['application/json'].schema.$ref as string;
      const envelope = document.components.schemas[ref.replace('#/components/schemas/', '')];
      assert.deepEqual(envelope.properties.type.enum, [type]);
      assert.deepEqual(envelope.required, ['id', 'type', 'created_at', 'livemode', 'data']);
    }
  });

  it('renders /docs from the document: every operation, webhook and error code, nothing from another site', async () => {
    const res = await t.inject({ method: 'GET', url: '/docs' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.match(String(res.headers['content-security-policy']), /default-src 'none'; style-src 'self'/);
    const page = res.body;
    for (const operation of operationsOf(document)) {
      const [method, url] = operation.split(' ') as [string, string];
      const id = document.paths[url][method.toLowerCase()].operationId as string;
      assert.ok(page.includes(`id="${id}"`), operation);
      // The heading's path may break after each slash (a <wbr>), on a phone.
      assert.ok(page.includes(`<code>${url.replaceAll('/', '/<wbr>').replace(/<wbr>$/, '')}</code>`), operation);
    }
    for (const type of Object.keys(document.webhooks)) assert.ok(page.includes(`id="webhook-${type}"`), type);
    for (const code of Object.keys(errorCatalogue)) assert.ok(page.includes(`id="error-${code}"`), code);
    assert.ok(page.includes('webhook-signature') && page.includes('Idempotency-Key') && page.includes('Authorization: Bearer'));
    // Every address the page loads or links is ours: no scheme, no other host.
    const addresses = [...page.matchAll(/(?:src|href)="([^"]*)"/g)].map((match) => match[1]!);
    assert.ok(addresses.length > 10);
    assert.deepEqual(
      addresses.filter((address) => !address.startsWith('/') && !address.startsWith('#')),
      [],
    );
    assert.doesNotMatch(page, /<script/);
    const css = await t.inject({ method: 'GET', url: '/docs/docs.css' });
    assert.equal(css.statusCode, 200);
    assert.match(String(css.headers['content-type']), /^text\/css/);
    assert.doesNotMatch(css.body, /url\(|@import/);
  });
});
