/**
 * The one renderer of error responses. Whatever fails (our ApiError, a schema validation, Fastify's body
 * parser, an unexpected exception) leaves as `{error, message, request_id[, param]}` with a status from the
 * catalogue. Internals are never shown at 5xx.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { errorCatalogue, statusOf, type ErrorCode } from './catalogue.js';

interface AjvLikeError {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
  /** Set by Ajv when the error is about an object's key (propertyNames), not its value. */
  propertyName?: string;
}

/** AJV's "string,number,boolean,null" as people write it: "a string, a number, a boolean or null". */
function typeNames(types: string): string {
  const names = types.split(',').map((type) => (type === 'null' ? 'null' : `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names.at(-1)}` : (names[0] ?? types);
}

/**
 * A field as `param` names it: `metadata.note`, and an array's element by its index, `recipients[17].to`.
 * `data` is the value validated, which says where an index is an array's rather than an object's key.
 */
function fieldPathIn(instancePath: string, child: unknown, data: unknown): string {
  const parts = instancePath
    .split('/')
    .filter(Boolean)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (typeof child === 'string') parts.push(child);
  let path = '';
  let value = data;
  for (const part of parts) {
    path = Array.isArray(value) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`;
    value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  }
  return path;
}

/**
 * Friendlier wording for a pattern failure, by field path; a route declares its own in `config.patternHints`.
 * A field in a list is found with its index left out (`recipients[].to`), and its hint may name the place.
 */
export type PatternHints = Readonly<Record<string, string | ((param: string) => string)>>;

/** Turns the first schema-validation error into a param and a sentence a person can act on. */
export function describeValidationError(
  error: AjvLikeError,
  context: string,
  patternHints: PatternHints = {},
  data?: unknown,
): { param?: string; message: string } {
  const fieldPath = (instancePath: string, child?: unknown) => fieldPathIn(instancePath, child, data);
  const where = context === 'body' ? '' : `${context} `;
  switch (error.keyword) {
    case 'required': {
      const param = fieldPath(error.instancePath, error.params.missingProperty);
      return { param, message: `Missing required field: ${where}${param}.` };
    }
    case 'additionalProperties': {
      const param = fieldPath(error.instancePath, error.params.additionalProperty);
      if (context === 'querystring') return { param, message: `Unknown query parameter: ${param}.` };
      return { param, message: `Unknown field: ${where}${param}.` };
    }
    case 'propertyNames': {
      const param = fieldPath(error.instancePath);
      const name = String(error.params.propertyName ?? '');
      return { param, message: `${param} has an invalid key "${name.slice(0, 80)}": keys are at most 64 characters.` };
    }
    case 'maxLength':
      if (error.propertyName !== undefined) {
        // Reported by propertyNames: the key, not the value, is too long.
        const param = fieldPath(error.instancePath);
        return {
          param,
          message: `${param} keys must be at most ${String(error.params.limit)} characters; "${error.propertyName.slice(0, 80)}" is longer.`,
        };
      }
      break;
    case 'pattern': {
      const param = fieldPath(error.instancePath);
      const hint = patternHints[param] ?? patternHints[param.replace(/\[\d+\]/g, '[]')];
      if (hint) return { param, message: typeof hint === 'string' ? hint : hint(param) };
      break;
    }
    case 'type': {
      const param = fieldPath(error.instancePath);
      if (param === '') return { message: `The request body must be a JSON ${String(error.params.type)}.` };
      // Query values are all text; only a parameter given twice (?limit=1&limit=2) arrives as a list.
      if (context === 'querystring') return { param, message: `${param} must be given once.` };
      return { param, message: `${param} must be ${typeNames(String(error.params.type))}.` };
    }
    case 'enum': {
      const param = fieldPath(error.instancePath);
      const allowed = Array.isArray(error.params.allowedValues) ? error.params.allowedValues.map(String).join(', ') : '';
      return { param, message: `${param} must be one of ${allowed}.` };
    }
    case 'anyOf': {
      const param = fieldPath(error.instancePath);
      return { param, message: `${param} has a value of a type that is not allowed.` };
    }
    case 'minItems':
    case 'maxItems': {
      const param = fieldPath(error.instancePath);
      const bound = error.keyword === 'minItems' ? 'at least' : 'at most';
      return { param, message: `${param} must have ${bound} ${Number(error.params.limit).toLocaleString('en-US')} items.` };
    }
    default:
      break;
  }
  const param = fieldPath(error.instancePath);
  if (param === '') return { message: `The request ${context} ${error.message ?? 'is invalid'}.` };
  return { param, message: `${param} ${error.message ?? 'is invalid'}.` };
}

/** The 413 of a route that takes larger bodies than the default names its own limit. */
function payloadTooLarge(request: FastifyRequest | undefined): ApiError {
  const limit = request?.routeOptions.bodyLimit;
  if (limit === undefined || limit <= 64 * 1024) return new ApiError('payload_too_large');
  const size = limit % (1024 * 1024) === 0 ? `${limit / (1024 * 1024)} MB` : `${Math.floor(limit / 1024)} KB`;
  return new ApiError('payload_too_large', `The request body is larger than ${size}.`);
}

/** Maps Fastify's own errors (body parsing, content type, validation) onto catalogue codes. */
function fromFastifyError(error: FastifyError, request: FastifyRequest | undefined): ApiError {
  if (error.validation && error.validation.length > 0) {
    const first = error.validation[0] as unknown as AjvLikeError;
    const context = error.validationContext ?? 'body';
    const data = context === 'body' ? request?.body : context === 'querystring' ? request?.query : undefined;
    const { param, message } = describeValidationError(first, context, request?.routeOptions.config.patternHints, data);
    return new ApiError('invalid_request', message, param === undefined ? {} : { param });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('unsupported_media_type');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return payloadTooLarge(request);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('invalid_json', 'The request body is empty; send a JSON object.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_json');
    case 'FST_ERR_BAD_URL':
      return new ApiError('invalid_request', 'The request URL has a malformed percent-encoding.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No id of ours is that long, so no resource can be there.
      return new ApiError('not_found');
    default:
      break;
  }
  if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return new ApiError('invalid_json');
  const status = error.statusCode ?? 500;
  if (status === 404) return new ApiError('not_found');
  if (status === 405) return new ApiError('method_not_allowed');
  if (status === 413) return payloadTooLarge(request);
  if (status === 415) return new ApiError('unsupported_media_type');
  if (status === 429) return new ApiError('rate_limit_exceeded');
  if (status >= 400 && status < 500) return new ApiError('invalid_request', 'The request could not be processed.');
  return new ApiError('internal_error', undefined, { cause: error });
}

/** Seconds a client is asked to wait after a database outage answer: a short outage is usually over by then. */
const databaseRetryAfterSeconds = 2;

/**
 * `request`, when known, gives the route's wording for pattern failures, names array elements in `param`
 * (`recipients[17].to`) and a route's own body limit in a 413.
 */
export function toApiError(error: unknown, request?: FastifyRequest): ApiError {
  if (error instanceof ApiError) return error;
  // A lost or refused connection (or an unwritable SQLite file) is an outage, not a bug: say so and when to retry.
  if (isDatabaseUnavailable(error)) {
    return new ApiError('database_unavailable', undefined, { cause: error, retryAfterSeconds: databaseRetryAfterSeconds });
  }
  if (error && typeof error === 'object' && ('statusCode' in error || 'validation' in error || 'code' in error)) {
    return fromFastifyError(error as FastifyError, request);
  }
  return new ApiError('internal_error', undefined, { cause: error });
}

/** The JSON body of every error response. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  request_id: string;
  param?: string;
}

/** The JSON body an ApiError is answered with. */
export function errorBody(request: FastifyRequest, apiError: ApiError): ErrorBody {
  const body: ErrorBody = {
    error: apiError.code,
    // Internals stay internal: a 5xx caused by a bug shows only the catalogue's words.
    message: apiError.code === 'internal_error' ? errorCatalogue.internal_error.message : apiError.message,
    request_id: request.id,
  };
  if (apiError.param !== undefined) body.param = apiError.param;
  return body;
}

/** Renders an ApiError as HTTP: the catalogue's status for its code, Retry-After when it says when. */
export function sendError(request: FastifyRequest, reply: FastifyReply, apiError: ApiError): FastifyReply {
  const body = errorBody(request, apiError);
  reply.errorCode = apiError.code;
  if (apiError.retryAfterSeconds !== undefined) reply.header('retry-after', String(apiError.retryAfterSeconds));
  return reply.code(statusOf(apiError.code)).type('application/json; charset=utf-8').send(body);
}

/** Fastify's `frameworkErrors`: the router fails before any hook runs, so the request id header is set here. */
export function sendFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  void sendError(request, reply, toApiError(error));
}

declare module 'fastify' {
  interface FastifyReply {
    /** The error code this reply carries, for the request log. */
    errorCode: ErrorCode | null;
  }
  interface FastifyContextConfig {
    /** The route's wording for a pattern failure of one of its fields, by field path (`to`). */
    patternHints?: PatternHints;
  }
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.decorateReply('errorCode', null);
  app.setErrorHandler((error, request, reply) => {
    const apiError = toApiError(error, request);
    if (apiError.code === 'internal_error') {
      request.log.error({ err: apiError.cause ?? apiError, code: apiError.code }, 'request failed');
    } else if (apiError.code === 'database_unavailable') {
      const cause = apiError.cause as { code?: unknown; message?: unknown } | undefined;
      request.log.warn({ code: apiError.code, reason: cause?.code ?? cause?.message }, 'request failed: the database is unavailable');
    } else if (statusOf(apiError.code) >= 500) {
      // A provider's refusal or outage is expected and already explained by the message: no stack trace.
      request.log.warn({ code: apiError.code, reason: apiError.message }, 'request failed at the provider');
    } else {
      request.log.debug({ code: apiError.code }, 'request rejected');
    }
    return sendError(request, reply, apiError);
  });

  app.setNotFoundHandler((request, reply) => sendError(request, reply, new ApiError('not_found')));
}

/** Answers 405 with an `Allow` header for the methods a path does not have. */
export function registerMethodNotAllowed(app: FastifyInstance, url: string, allowed: readonly string[]): void {
  // Every method the router knows (QUERY included), HEAD too where GET is not allowed (Fastify answers HEAD
  // with the GET route's headers otherwise).
  const others = app.supportedMethods.filter((method) => !allowed.includes(method) && !(method === 'HEAD' && allowed.includes('GET')));
  const allowHeader = [...allowed, ...(allowed.includes('GET') ? ['HEAD'] : [])].join(', ');
  // The path as a client writes it: with the plugin's prefix, and `{id}` for a parameter.
  const shown = `${app.prefix}${url}`.replace(/:(\w+)/g, '{$1}');
  app.route({
    method: others,
    url,
    // The body of a request to the wrong method is never read.
    onRequest: async (request, reply) => {
      reply.header('allow', allowHeader);
      return sendError(request, reply, new ApiError('method_not_allowed', `Use ${allowed.join(' or ')} on ${shown}.`));
    },
    handler: async () => undefined,
  });
}

export type { ErrorCode };
