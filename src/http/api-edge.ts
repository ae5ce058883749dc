/**
 * The answers no route owns: an unknown path under /v1, and the URLs the router turns away before any hook
 * runs (a bad percent-encoding, an over-long path parameter), each in the manner of the part of the site
 * that was asked (the API's JSON, the portal's pages, plain JSON elsewhere).
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../container.js';
import { ApiError } from '../errors/api-error.js';
import { errorBody, sendError, sendFrameworkError } from '../errors/error-handler.js';
import { toApiError } from '../errors/to-api-error.js';
import { requestLogHook } from './request-log.plugin.js';
import { isPortalUrl, sendPortalFrameworkError } from '../portal/portal.routes.js';
import { identifyApiKey, refuseWithoutApiKey } from './api-auth.plugin.js';
import { countRequest } from './rate-limit.plugin.js';
import { setSecurityHeaders } from './security-headers.plugin.js';
import { closestRoute, type KnownRoute } from './route-suggestion.js';

/**
 * An unknown path under /v1 is still an API request: authenticated, counted against the key's limit and
 * listed in the request log (where a mistyped URL is found), then answered 404 with the path named, the
 * route it most likely meant when one is close, and where every route is listed.
 */
export function unknownApiPathHandler(routes: readonly KnownRoute[]): (request: FastifyRequest, reply: FastifyReply) => FastifyReply {
  return (request, reply) => {
    const path = request.url.split('?')[0]!.slice(0, 200);
    const meant = closestRoute(
      routes.filter((route) => route.method !== 'HEAD'),
      request.method,
      path,
    );
    const hint = meant === undefined ? '' : ` Did you mean ${meant}?`;
    return sendError(
      request,
      reply,
      new ApiError(
        'not_found',
        `Unrecognized request URL: ${request.method} ${path}.${hint} Every route is listed in the API reference at /docs.`,
      ),
    );
  };
}

/** A URL of the JSON API under /v1. */
function isApiUrl(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
}

/**
 * A /v1 URL the router refused still passes the API's gate first, as every /v1 request does (the OpenAPI
 * document promises 401 without a valid key, and the rate-limit headers), and is written to the request
 * log of the key's account like an unknown path under /v1.
 */
async function sendApiFrameworkError(
  app: FastifyInstance,
  services: Services,
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  reply.header('x-request-id', request.id);
  const gate = [
    identifyApiKey({ db: services.db, clock: services.clock }),
    countRequest({ perKeyLimiter: services.perKeyLimiter, perIpLimiter: services.perIpLimiter }),
    refuseWithoutApiKey,
  ];
  let apiError = toApiError(error);
  try {
    for (const hook of gate) await hook.call(app, request, reply);
  } catch (refusal) {
    apiError = toApiError(refusal);
  }
  // The /v1 scope's own hooks (body capture, request log) do not run for these: do their part here.
  request.responseBodyText = JSON.stringify(errorBody(request, apiError));
  const logRequest = requestLogHook(services.requestLog);
  reply.raw.once('finish', () => logRequest.call(app, request, reply, () => {}));
  sendError(request, reply, apiError);
}

/** Fastify's `frameworkErrors` option: no hook runs for these, so the security headers are set here. */
export function answerFrameworkError(
  app: FastifyInstance,
  services: Services,
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  setSecurityHeaders(reply, { strictTransportSecurity: services.config.strictTransportSecurity });
  if (isPortalUrl(request.url)) void sendPortalFrameworkError(services, error, request, reply);
  else if (isApiUrl(request.url)) void sendApiFrameworkError(app, services, error, request, reply);
  else sendFrameworkError(error, request, reply);
}
