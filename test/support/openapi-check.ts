/**
 * Checks every /v1 answer a test app gives against the app's own OpenAPI document (GET /v1/openapi.json):
 * the status must be documented for the operation, and the body must match the documented schema of that
 * status (Ajv, JSON Schema 2020-12, formats checked). startTestApp attaches it to every app, so the whole
 * suite's answers are checked; a mismatch fails the test file when its app closes.
 */
import type { FastifyInstance } from 'fastify';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

type Json = Record<string, any>;

/** Answered before or beside any route, on every path (the document's description names them). */
const edgeStatuses = new Set([405, 408, 413, 415, 417, 431]);

export interface ResponseCheck {
  /** `METHOD /v1/path status: why`, one per mismatching answer. */
  readonly mismatches: string[];
  /** `METHOD /v1/path status` of each documented answer seen. */
  readonly seen: Set<string>;
}

/** The document's operations as `METHOD /v1/path`. */
export function operationsOf(document: Json): string[] {
  return Object.entries(document.paths as Json).flatMap(([path, methods]) =>
    Object.keys(methods as Json).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** Adds the onSend hook that checks each answer; call it before the app is ready. */
export function attachResponseCheck(app: FastifyInstance): ResponseCheck {
  const check: ResponseCheck = { mismatches: [], seen: new Set() };
  let document: Json | undefined;
  let ajv: Ajv2020 | undefined;
  const validators = new Map<string, ValidateFunction>();
  const docId = 'https://callgate.invalid/openapi.json';

  function validatorFor(key: string, schema: Json): ValidateFunction {
    let validate = validators.get(key);
    if (!validate) {
      if (!ajv) {
        ajv = new Ajv2020({ strict: false, allErrors: false });
        addFormats.default(ajv);
        ajv.addSchema({ $id: docId, components: document!.components }, docId);
      }
      // The document's refs are local to it; here they point into the copy registered above.
      const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${docId}#/components/`)) as Json;
      validate = ajv.compile(rebased);
      validators.set(key, validate);
    }
    return validate;
  }

  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url;
    if (url === undefined || !url.startsWith('/v1/')) return payload;
    document ??= app.swagger() as Json;
    const path = url.replace(/:(\w+)/g, '{$1}');
    const operation = (document.paths as Json)[path]?.[request.method.toLowerCase()] as Json | undefined;
    if (!operation) return payload; // hidden: 405 routes, HEAD, the document itself
    const status = reply.statusCode;
    const name = `${request.method} ${path} ${status}`;
    const documented = (operation.responses as Json)[String(status)] as Json | undefined;
    let schema: Json | undefined = documented?.content?.['application/json']?.schema;
    if (!documented) {
      if (!edgeStatuses.has(status)) {
        check.mismatches.push(`${name}: status not documented`);
        return payload;
      }
      schema = { $ref: '#/components/schemas/Error' };
    } else {
      check.seen.add(name);
    }
    // Fastify writes no body with a 204, whatever the handler gave (here the schema's serialized null).
    if (status === 204) return payload;
    // A binary answer (a recording): its type must be one the document names, such as audio/* for audio/wav.
    const binaryTypes = Object.keys((documented?.content ?? {}) as Json).filter((type) => type !== 'application/json');
    if (schema === undefined && binaryTypes.length > 0) {
      const sent = String(reply.getHeader('content-type') ?? '').split(';')[0]!;
      const matches = binaryTypes.some((type) => type === sent || (type.endsWith('/*') && sent.startsWith(type.slice(0, -1))));
      if (!matches) check.mismatches.push(`${name}: content type ${sent} is not one of ${binaryTypes.join(', ')}`);
      if (reply.getHeader('x-request-id') === undefined) check.mismatches.push(`${name}: no X-Request-Id header`);
      return payload;
    }
    const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
    if (text === undefined) {
      check.mismatches.push(`${name}: body is not text`);
      return payload;
    }
    if (!schema) {
      if (text !== '') check.mismatches.push(`${name}: documented without a body, answered ${text.slice(0, 200)}`);
      return payload;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      check.mismatches.push(`${name}: body is not JSON: ${text.slice(0, 200)}`);
      return payload;
    }
    const validate = validatorFor(`${name}`, schema);
    if (!validate(body)) {
      check.mismatches.push(`${name}: ${ajv!.errorsText(validate.errors)} in ${text.slice(0, 300)}`);
    }
    if (reply.getHeader('x-request-id') === undefined) check.mismatches.push(`${name}: no X-Request-Id header`);
    return payload;
  });
  return check;
}
