/**
 * The response schemas of errors, from the catalogue: a route names the codes its own logic can answer,
 * and gets one schema per status whose `error` is an enum of exactly those codes (plus the ones every /v1
 * route can answer). Fastify serializes error bodies with them (the same five fields, in the same order, as
 * `sendError` writes them) and the OpenAPI document (src/features/openapi) shows them.
 */
import { Type, type TObject } from '@sinclair/typebox';
import { errorCatalogue, type ErrorCode } from './catalogue.js';

export const errorCodes = Object.keys(errorCatalogue) as ErrorCode[];

const errorFields = (codes: readonly ErrorCode[]) => ({
  error: Type.Unsafe<ErrorCode>({ type: 'string', enum: [...codes], description: 'A stable code of the error catalogue' }),
  message: Type.String({ description: 'What went wrong and what to do, for people (its wording may change)' }),
  request_id: Type.String({ description: 'req_…, also the X-Request-Id header: quote it to support' }),
  param: Type.Optional(Type.String({ description: 'The request field at fault, when exactly one is' })),
  retryable: Type.Boolean({
    description:
      'Whether the same request can succeed if sent again (after Retry-After, when sent): true for 408, 429 and 5xx but provider_error; false for every other 4xx and for provider_error, a definite refusal',
  }),
});

/** Any error body, whatever its code (the document's `Error` component). */
export const ErrorResponse = Type.Object(errorFields(errorCodes));

/**
 * What any /v1 route can answer whatever it does: a malformed URL or query (400), no valid key (401), too
 * many requests (429), a fault (500), the database or this server going away (503).
 */
const everyRoute: readonly ErrorCode[] = [
  'invalid_request',
  'unauthorized',
  'rate_limit_exceeded',
  'internal_error',
  'database_unavailable',
  'service_unavailable',
];
/** What a request that may carry a body can meet in its parsing (Fastify reads bodies of these methods). */
const withBody: readonly ErrorCode[] = ['invalid_json', 'payload_too_large', 'unsupported_media_type'];

/**
 * The error responses of a route: `codes` are those of its own logic (`not_found`, `batch_finished`, …);
 * `body` adds the body-parsing ones (routes of POST and DELETE).
 */
export function errorResponses(codes: readonly ErrorCode[], options: { body?: boolean } = {}): Record<number, TObject> {
  const all = new Set<ErrorCode>([...everyRoute, ...(options.body ? withBody : []), ...codes]);
  // A route with Idempotency-Key rules answers a key still held by its first request as well.
  if (all.has('idempotency_conflict')) all.add('idempotency_in_progress');
  const byStatus = new Map<number, ErrorCode[]>();
  // In the catalogue's order, so each enum reads the same wherever it appears.
  for (const code of errorCodes) {
    if (!all.has(code)) continue;
    const status = errorCatalogue[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, TObject> = {};
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[status] = Type.Object(errorFields(statusCodes), { description: `Error: ${statusCodes.join(', ')}` });
  }
  return responses;
}
