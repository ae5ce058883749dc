/**
 * Whatever failed (our ApiError, a schema validation, Fastify's body parser, the database, an unexpected
 * exception) as one ApiError with a catalogue code, ready for the one renderer (error-handler.ts).
 */
import type { FastifyError, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/unavailable.js';
import { ApiError } from './api-error.js';
import { describeValidationError, type AjvLikeError } from './validation-messages.js';

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
