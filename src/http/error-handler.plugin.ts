/**
 * Every failure a handler or hook throws, and every unknown path, answered by the one renderer; logged by
 * how surprising it is (a bug with its stack, an outage or a provider's refusal as a warning).
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';
import { statusOf } from '../errors/catalogue.js';
import { sendError } from '../errors/error-handler.js';
import { toApiError } from '../errors/to-api-error.js';

async function errorHandler(app: FastifyInstance): Promise<void> {
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

export default fp(errorHandler, { name: 'error-handler' });
