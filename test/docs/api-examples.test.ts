/**
 * The answers the docs show are the answers the API gives: every JSON example of the README, docs/ and the
 * client's README is checked against the OpenAPI document (which test/support/openapi-check.ts holds every
 * real answer of the suite to), all required fields present and none the schema lacks; the field tables
 * of docs/webhooks.md list exactly the fields of each event's `data`; the client's README names every
 * error code the client makes itself.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { repoRoot } from '../support/repo-root.js';

type Json = Record<string, any>;

const read = (file: string) => fs.readFileSync(path.join(repoRoot, file), 'utf8');
const document = JSON.parse(read('docs/openapi.json')) as Json;
const schemas = document.components.schemas as Record<string, Json>;
const pages = [
  'README.md',
  ...fs
    .readdirSync(path.join(repoRoot, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => `docs/${file}`),
  'clients/typescript/README.md',
];

const docId = 'https://callgate.invalid/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats.default(ajv);
ajv.addSchema({ $id: docId, components: document.components }, docId);
const validatorOf = (name: string) => ajv.getSchema(`${docId}#/components/schemas/${name}`)!;

/** A schema with its `$ref` followed (the document's refs are all to components.schemas). */
function resolved(schema: Json): Json {
  return typeof schema.$ref === 'string' ? resolved(schemas[schema.$ref.split('/').at(-1)!]!) : schema;
}

const eventSchemas: Record<string, string> = {
  'call.completed': 'CallCompletedEvent',
  'call.failed': 'CallFailedEvent',
  'batch.completed': 'BatchCompletedEvent',
  'webhook.test': 'WebhookTestEvent',
};

/** The schema an example shows, by its shape and its id's prefix; undefined for what is not an API answer. */
function schemaOf(example: Json): string | undefined {
  if (typeof example.type === 'string' && 'data' in example) return eventSchemas[example.type];
  if (Array.isArray(example.data) && 'has_more' in example) {
    const item = example.data[0] === undefined ? undefined : schemaOf(example.data[0]);
    return item === undefined ? undefined : item.endsWith('Event') ? 'EventList' : `${item}List`;
  }
  if ('error' in example && 'request_id' in example) return 'Error';
  const id = typeof example.id === 'string' ? example.id : '';
  if (id.startsWith('batch_')) return 'Batch';
  if (id.startsWith('rcp_')) return 'Recipient';
  if (id.startsWith('sup_')) return 'Suppression';
  if (id.startsWith('we_')) return 'secret' in example ? 'WebhookEndpointWithSecret' : 'WebhookEndpoint';
  if (id.startsWith('call_')) return Object.keys(example).every((key) => key in schemas.CallCreated!.properties) ? 'CallCreated' : 'Call';
  return undefined;
}

/** Fields of `value` that `schema` does not have, at every level the schema names its properties. */
function unknownFields(value: unknown, schema: Json, at: string): string[] {
  const shape = resolved(schema);
  if (Array.isArray(value)) return shape.items ? value.flatMap((item, index) => unknownFields(item, shape.items, `${at}[${index}]`)) : [];
  if (value === null || typeof value !== 'object') return [];
  const options = (shape.anyOf ?? shape.oneOf) as Json[] | undefined;
  if (options) {
    const fits = options.map((option) => unknownFields(value, option, at));
    return fits.find((found) => found.length === 0) ?? fits.reduce((a, b) => (a.length <= b.length ? a : b));
  }
  if (!shape.properties) return [];
  return Object.entries(value).flatMap(([key, field]) =>
    key in shape.properties ? unknownFields(field, shape.properties[key], `${at}.${key}`) : [`${at}.${key}`],
  );
}

/** The fenced ```json blocks of a page, with their line numbers. */
function jsonBlocks(page: string): { line: number; text: string }[] {
  const text = read(page);
  return [...text.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((match) => ({
    line: text.slice(0, match.index).split('\n').length,
    text: match[1]!,
  }));
}

it('every JSON example of an API answer or event has the fields of its schema: all it requires, none it lacks', () => {
  const checked = new Map<string, number>();
  const problems: string[] = [];
  for (const page of pages) {
    for (const block of jsonBlocks(page)) {
      const where = `${page}:${block.line}`;
      let example: unknown;
      try {
        example = JSON.parse(block.text);
      } catch {
        // A fragment (fields of a request body, as in docs/batches.md) must still be JSON once in braces.
        try {
          JSON.parse(`{${block.text}}`);
        } catch (error) {
          problems.push(`${where}: neither JSON nor fields of an object (${(error as Error).message})`);
        }
        continue;
      }
      if (example === null || typeof example !== 'object' || Array.isArray(example)) continue;
      const name = schemaOf(example as Json);
      if (name === undefined) continue;
      checked.set(name, (checked.get(name) ?? 0) + 1);
      const validate = validatorOf(name);
      if (!validate(example)) problems.push(`${where} (${name}): ${ajv.errorsText(validate.errors)}`);
      for (const field of unknownFields(example, schemas[name]!, name)) problems.push(`${where}: ${field} is not in the schema`);
    }
  }
  assert.deepEqual(problems, []);
  // The examples a newcomer copies from: a call, a batch, its recipients, every event of a webhook.
  for (const name of ['CallCreated', 'Batch', 'RecipientList', 'CallCompletedEvent', 'CallFailedEvent', 'BatchCompletedEvent']) {
    assert.ok(checked.has(name), `an example of ${name} was checked (${[...checked.keys()].join(', ')})`);
  }
});

it("docs/webhooks.md's table of each event lists exactly the fields of its data", () => {
  const text = read('docs/webhooks.md');
  let tables = 0;
  for (const [type, name] of Object.entries(eventSchemas)) {
    const section = new RegExp(`^### ${type.replace('.', '\\.')}\\n([\\s\\S]*?)(?=^#{1,3} )`, 'm').exec(text)?.[1];
    assert.ok(section, `docs/webhooks.md has a section ### ${type}`);
    const table = /^\| Field of `data` \|[^\n]*\n\|[-| ]+\|\n((?:\|[^\n]*\n)+)/m.exec(section);
    if (!table) continue;
    tables++;
    const fields = [...table[1]!.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1]!);
    const data = resolved(resolved(schemas[name]!).properties.data);
    assert.deepEqual([...fields].sort(), Object.keys(data.properties).sort(), `the table of ${type}`);
  }
  assert.ok(tables >= 3, `${tables} tables found`);
});

it("the client's README names every error code the client makes itself", () => {
  const readme = read('clients/typescript/README.md');
  const sourceDir = path.join(repoRoot, 'clients/typescript/src');
  const codes = new Set(
    fs
      .readdirSync(sourceDir)
      .filter((file) => file.endsWith('.ts'))
      .flatMap((file) =>
        [...fs.readFileSync(path.join(sourceDir, file), 'utf8').matchAll(/\bcode: '([a-z_]+)'/g)].map((match) => match[1]!),
      ),
  );
  assert.ok(codes.has('timeout') && codes.has('connection_error'), [...codes].join());
  assert.deepEqual(
    [...codes].filter((code) => !readme.includes(`\`${code}\``)),
    [],
  );
});

it('catches an example that lacks a required field or has one the schema lacks (the checks above can fail)', () => {
  const batch = {
    id: 'batch_x',
    agent_id: 'agent_x',
    name: null,
    status: 'running',
    scheduled_at: 't',
    max_concurrency: 1,
    created_at: 't',
    completed_at: null,
    livemode: false,
  };
  const counts = { total: 1, queued: 1, dialing: 0, in_progress: 0, completed: 0, failed: 0, cancelled: 0 };
  assert.equal(schemaOf({ data: [{ id: 'rcp_x' }], has_more: false }), 'RecipientList');
  assert.equal(validatorOf('Batch')({ ...batch, counts }), false, 'calling_window and retry are required');
  assert.equal(validatorOf('Batch')({ ...batch, counts, calling_window: null, retry: null }), true);
  assert.deepEqual(unknownFields({ ...batch, counts: { ...counts, extra: 1 }, colour: 'red' }, schemas.Batch!, 'Batch'), [
    'Batch.counts.extra',
    'Batch.colour',
  ]);
});
