/**
 * The one renderer of error responses: every failure leaves as `{error, message, request_id[, param], retryable}`
 * with the catalogue's status for its code (to-api-error.ts turns any failure into an ApiError first).
 * Internals are never shown at 5xx. The error-handler plugin (src/http/error-handler.plugin.ts) sends
 * through it.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './api-error.js';
import { errorCatalogue, statusOf, type ErrorCode } from './catalogue.js';
import { toApiError } from './to-api-error.js';
import type { PatternHints } from './validation-messages.js';

/** The JSON body of every error response. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  request_id: string;
  param?: string;
  retryable: boolean;
}

/** The JSON body an ApiError is answered with. */
export function errorBody(request: FastifyRequest, apiError: ApiError): ErrorBody {
  return {
    error: apiError.code,
    // Internals stay internal: a 5xx caused by a bug shows only the catalogue's words.
    message: apiError.code === 'internal_error' ? errorCatalogue.internal_error.message : apiError.message,
    request_id: request.id,
    ...(apiError.param === undefined ? {} : { param: apiError.param }),
    retryable: apiError.retryable,
  };
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

/** Answers 405 with an `Allow` header for the methods a path does not have. */
declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route that only answers 405 for the methods its path does not take (never a route to suggest). */
    methodNotAllowed?: boolean;
  }
}

export function registerMethodNotAllowed(
  app: FastifyInstance,
  url: string,
  allowed: readonly string[],
  options: { readonly head?: boolean } = {},
): void {
  // Every method the router knows (QUERY included), HEAD too where GET is not allowed (Fastify answers HEAD
  // with the GET route's headers otherwise), or where the GET route has none (`head: false`).
  const head = options.head ?? allowed.includes('GET');
  const others = app.supportedMethods.filter((method) => !allowed.includes(method) && !(method === 'HEAD' && head));
  const allowHeader = [...allowed, ...(head ? ['HEAD'] : [])].join(', ');
  // The path as a client writes it: with the plugin's prefix, and `{id}` for a parameter.
  const shown = `${app.prefix}${url}`.replace(/:(\w+)/g, '{$1}');
  app.route({
    method: others,
    url,
    config: { methodNotAllowed: true },
    // The body of a request to the wrong method is never read.
    onRequest: async (request, reply) => {
      reply.header('allow', allowHeader);
      return sendError(request, reply, new ApiError('method_not_allowed', `Use ${allowed.join(' or ')} on ${shown}.`));
    },
    handler: async () => undefined,
  });
}
