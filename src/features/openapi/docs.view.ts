/**
 * The API reference at /docs, rendered from the OpenAPI document on the server: every operation with its
 * parameters, body and responses (fields, headers, error codes), the webhooks and the error catalogue.
 * Plain HTML and one stylesheet of ours: readable without JavaScript, nothing fetched from another site.
 */
import { html, raw, type SafeHtml } from '../../lib/html.js';

type Schema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  pattern?: string;
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  patternProperties?: Record<string, Schema>;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  $ref?: string;
  'x-errors'?: { code: string; status: number; message: string }[];
};
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface Response {
  description?: string;
  headers?: Record<string, { description?: string; schema?: Schema; $ref?: string }>;
  content?: Record<string, { schema?: Schema }>;
}
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, Response>;
}
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema>; headers?: Record<string, { description?: string }> };
}

/** `code` spans and paragraphs of the document's plain descriptions. */
function prose(text: string | undefined): SafeHtml {
  if (!text) return html``;
  const paragraphs = text.split(/\n\s*\n/).map((paragraph) => {
    const parts = paragraph.replace(/\s*\n\s*/g, ' ').split('`');
    return html`<p>${parts.map((part, index) => (index % 2 === 1 ? html`<code>${part}</code>` : part))}</p>`;
  });
  return html`${paragraphs}`;
}

function resolve(schema: Schema, document: OpenApiDocument): Schema {
  const name = schema.$ref?.replace('#/components/schemas/', '');
  return name === undefined ? schema : (document.components?.schemas?.[name] ?? schema);
}

/** A schema's type in a few words: `string (date-time)`, `"initiated"`, `one of a, b`, `array of object`. */
function typeOf(schema: Schema, document: OpenApiDocument): string {
  if (schema.$ref) return schema.$ref.replace('#/components/schemas/', '');
  const resolved = resolve(schema, document);
  if (resolved.const !== undefined) return JSON.stringify(resolved.const);
  if (resolved.enum) return `one of ${resolved.enum.map((value) => JSON.stringify(value)).join(', ')}`;
  if (resolved.anyOf) return resolved.anyOf.map((option) => typeOf(option, document)).join(' or ');
  const type = Array.isArray(resolved.type) ? resolved.type.join(' or ') : (resolved.type ?? 'any');
  if (type === 'array' && resolved.items) return `array of ${typeOf(resolved.items, document)}`;
  const limits = [
    resolved.format,
    resolved.pattern && `pattern ${resolved.pattern}`,
    resolved.minimum !== undefined && `≥ ${resolved.minimum}`,
    resolved.maximum !== undefined && `≤ ${resolved.maximum}`,
    resolved.maxLength !== undefined && `≤ ${resolved.maxLength} characters`,
    resolved.minItems !== undefined && `≥ ${resolved.minItems} items`,
    resolved.maxItems !== undefined && `≤ ${resolved.maxItems} items`,
  ].filter(Boolean);
  return limits.length > 0 ? `${type} (${limits.join(', ')})` : type;
}

interface FieldRow {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

/** The fields of an object schema, nested ones as `counts.total`, `data[].id`, `metadata.{key}`. */
function fieldRows(schema: Schema, document: OpenApiDocument, prefix = '', depth = 0): FieldRow[] {
  const resolved = resolve(schema, document);
  if (depth > 4) return [];
  const objectOf = (candidate: Schema): Schema | undefined => {
    const found = resolve(candidate, document);
    if (found.properties) return found;
    if (found.anyOf) return found.anyOf.map((option) => resolve(option, document)).find((option) => option.properties);
    return undefined;
  };
  const rows: FieldRow[] = [];
  for (const [name, property] of Object.entries(resolved.properties ?? {})) {
    const path = `${prefix}${name}`;
    rows.push({
      name: path,
      type: typeOf(property, document),
      required: resolved.required?.includes(name) ?? false,
      description: resolve(property, document).description ?? '',
    });
    const nested = objectOf(property);
    if (nested) rows.push(...fieldRows(nested, document, `${path}.`, depth + 1));
    const items = resolve(property, document).items;
    const nestedItems = items && objectOf(items);
    if (nestedItems) rows.push(...fieldRows(nestedItems, document, `${path}[].`, depth + 1));
  }
  return rows;
}

function fieldsTable(schema: Schema | undefined, document: OpenApiDocument): SafeHtml {
  if (!schema) return html``;
  const resolved = resolve(schema, document);
  if (resolved.anyOf && !resolved.properties) {
    // A union of envelopes (an event of any type): each shape in turn.
    return html`${resolved.anyOf.map((option) => html`<p class="variant">${resolve(option, document).description ?? ''}</p>${fieldsTable(option, document)}`)}`;
  }
  const rows = fieldRows(resolved, document);
  if (rows.length === 0) return html`<p class="type">${typeOf(resolved, document)}</p>`;
  return html`<table class="fields">
<thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead>
<tbody>${rows.map(
    (row) =>
      html`<tr><td><code>${row.name}</code>${row.required ? html` <span class="required">required</span>` : ''}</td><td>${row.type}</td><td>${row.description}</td></tr>`,
  )}</tbody>
</table>`;
}

function parametersTable(parameters: Parameter[] | undefined, document: OpenApiDocument): SafeHtml {
  if (!parameters || parameters.length === 0) return html``;
  return html`<h4>Parameters</h4>
<table class="fields">
<thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Description</th></tr></thead>
<tbody>${parameters.map(
    (parameter) =>
      html`<tr><td><code>${parameter.name}</code>${parameter.required ? html` <span class="required">required</span>` : ''}</td><td>${parameter.in}</td><td>${parameter.schema ? typeOf(parameter.schema, document) : ''}</td><td>${parameter.description ?? parameter.schema?.description ?? ''}</td></tr>`,
  )}</tbody>
</table>`;
}

function responsesList(responses: Record<string, Response> | undefined, document: OpenApiDocument): SafeHtml {
  if (!responses) return html``;
  return html`<h4>Responses</h4>${Object.entries(responses).map(([status, response]) => {
    const schema = response.content?.['application/json']?.schema;
    const errorCodes = schema && resolve(schema, document).properties?.error?.enum;
    const headers = Object.entries(response.headers ?? {});
    return html`<details class="response" ${status.startsWith('2') ? raw('open') : ''}>
<summary><span class="status status-${status[0]}">${status}</span> ${errorCodes ? html`${errorCodes.map((code, index) => html`${index > 0 ? ', ' : ''}<a href="#error-${String(code)}"><code>${String(code)}</code></a>`)}` : (response.description ?? '')}</summary>
${headers.length > 0 ? html`<p class="headers">Headers: ${headers.map(([name, value], index) => html`${index > 0 ? ', ' : ''}<code title="${value.description ?? document.components?.headers?.[name]?.description ?? ''}">${name}</code>`)}</p>` : ''}
${errorCodes ? html`<p>An error body: <code>error</code>, <code>message</code>, <code>request_id</code> and <code>param</code> when one field is at fault.</p>` : fieldsTable(schema, document)}
</details>`;
  })}`;
}

function operationSection(method: string, path: string, operation: Operation, document: OpenApiDocument): SafeHtml {
  const body = operation.requestBody?.content?.['application/json']?.schema;
  return html`<section class="operation" id="${operation.operationId ?? `${method}-${path}`}">
<h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${pathBreakingAtSlashes(path)}</code></h3>
<p class="summary">${operation.summary ?? ''}</p>
${prose(operation.description)}
${parametersTable(operation.parameters, document)}
${body ? html`<h4>Request body</h4>${fieldsTable(body, document)}` : ''}
${responsesList(operation.responses, document)}
</section>`;
}

/** A path that may wrap after a `/` only, never inside a word (`/v1/batches/{id}/recipi-ents` read badly). */
function pathBreakingAtSlashes(path: string): unknown[] {
  return path.split(/(?<=\/)/).map((segment, index) => (index === 0 ? segment : html`<wbr>${segment}`));
}

export function renderDocsPage(document: OpenApiDocument): string {
  const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })),
  );
  const tags = document.tags ?? [];
  const webhooks = Object.entries(document.webhooks ?? {}).flatMap(([name, methods]) =>
    Object.values(methods).map((operation) => ({ name, operation })),
  );
  const catalogue = document.components?.schemas?.ErrorCode?.['x-errors'] ?? [];
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · callgate</title>
<link rel="stylesheet" href="/docs/docs.css">
</head>
<body>
<header class="top"><a class="brand" href="/docs">callgate <span>API reference</span></a> <a href="/developers">Developer portal</a> <a href="/v1/openapi.json">OpenAPI document</a></header>
<div class="page">
<nav class="toc" aria-label="Contents">
<ul>${tags.map(
    (tag) =>
      html`<li>${tag.name}<ul>${operations
        .filter(({ operation }) => operation.tags?.includes(tag.name))
        .map(
          ({ path, method, operation }) =>
            html`<li><a href="#${operation.operationId ?? ''}"><span class="method method-${method}">${method.toUpperCase()}</span> <span class="path">${pathBreakingAtSlashes(path)}</span></a></li>`,
        )}</ul></li>`,
  )}
<li><a href="#webhooks">Webhooks</a></li>
<li><a href="#errors">Errors</a></li></ul>
</nav>
<main id="main">
<h1>${document.info.title} <span class="version">v${document.info.version}</span></h1>
${prose(document.info.description)}
<p>The machine-readable description of everything below is <a href="/v1/openapi.json"><code>GET /v1/openapi.json</code></a> (OpenAPI 3.1).</p>
${tags.map(
  (tag) => html`<h2 id="tag-${tag.name.toLowerCase()}">${tag.name}</h2>
<p>${tag.description ?? ''}</p>
${operations.filter(({ operation }) => operation.tags?.includes(tag.name)).map(({ path, method, operation }) => operationSection(method, path, operation, document))}`,
)}
<h2 id="webhooks">Webhooks</h2>
<p>callgate POSTs each event as JSON to your endpoints (set them up in the portal), signed with the Standard Webhooks headers below.</p>
${webhooks.map(
  ({ name, operation }) => html`<section class="operation" id="webhook-${name}">
<h3><span class="method method-post">POST</span> <code>${name}</code></h3>
${prose(operation.description)}
${parametersTable(operation.parameters, document)}
<h4>Body</h4>${fieldsTable(operation.requestBody?.content?.['application/json']?.schema, document)}
</section>`,
)}
<h2 id="errors">Errors</h2>
<p>Every error is JSON: <code>{"error", "message", "request_id", "param"?}</code>. Branch on <code>error</code>, never on <code>message</code>.</p>
<table class="fields">
<thead><tr><th scope="col">Code</th><th scope="col">Status</th><th scope="col">Meaning</th></tr></thead>
<tbody>${catalogue.map((entry) => html`<tr id="error-${entry.code}"><td><code>${entry.code}</code></td><td>${entry.status}</td><td>${entry.message}</td></tr>`)}</tbody>
</table>
</main>
</div>
</body>
</html>
`.value;
}
