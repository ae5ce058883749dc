/**
 * Composes the HTTP application from its features. No process concerns here (see server.ts), so tests
 * build the very same app and drive it with `inject` or a real port.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyPluginAsync,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Services } from './container.js';
import { ApiError } from './errors/api-error.js';
import { errorBody, registerErrorHandling, sendError, sendFrameworkError, toApiError } from './errors/error-handler.js';
import { batchesRoutes } from './features/batches/batches.routes.js';
import { callsRoutes } from './features/calls/calls.routes.js';
import { eventsRoutes } from './features/events/events.routes.js';
import { healthRoutes } from './features/health/health.routes.js';
import { readinessRoutes } from './features/health/readiness.routes.js';
import { registerHttpMetrics } from './features/metrics/http-metrics.hook.js';
import { metricsRoutes } from './features/metrics/metrics.routes.js';
import { registerOpenApi } from './features/openapi/openapi.routes.js';
import { isPortalUrl, portalRoutes, sendPortalFrameworkError } from './portal/portal.routes.js';
import { elevenLabsWebhookRoutes } from './features/providers/elevenlabs/elevenlabs.webhook.routes.js';
import { suppressionsRoutes } from './features/suppressions/suppressions.routes.js';
import { registerResponseBodyCapture, requestLogHook } from './features/request-log/request-log.hook.js';
import apiAuth, { identifyApiKey, refuseWithoutApiKey } from './http/api-auth.plugin.js';
import { registerAccessLog } from './http/access-log.hook.js';
import idempotency from './http/idempotency.plugin.js';
import rateLimit, { countRequest } from './http/rate-limit.plugin.js';
import { answerNodeEvents } from './http/client-errors.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { trackHandlers, type InFlightHandlers } from './http/in-flight.js';
import { refuseNulInQuery } from './http/nul-text.js';
import { registerRequestEdge } from './http/request-edge.hook.js';
import { serverOptions } from './http/server-options.js';
import { registerStrictTransportSecurity, setStrictTransportSecurity } from './http/strict-transport.hook.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Route handlers still running; shutdown waits for them before it closes the database. */
    inFlight: InFlightHandlers;
  }
}

/** The JSON API under /v1: every request authenticated, counted and logged, unknown paths included. */
const apiRoutes: FastifyPluginAsync<{ services: Services }> = async (v1, { services }) => {
  // The gate: the key identified, the request counted (per key, or per client IP without one), then a 401 without a key.
  await v1.register(apiAuth, { db: services.db, clock: services.clock });
  await v1.register(rateLimit, { perKeyLimiter: services.perKeyLimiter, perIpLimiter: services.perIpLimiter });
  v1.addHook('onRequest', refuseWithoutApiKey);
  // Before the routes: it learns each creating route that turns it on.
  await v1.register(idempotency, services.calls);
  v1.addHook('preValidation', refuseNulInQuery);
  registerResponseBodyCapture(v1);
  v1.addHook('onResponse', requestLogHook(services.requestLog));
  await v1.register(callsRoutes, { deps: services.calls });
  await v1.register(batchesRoutes, { deps: services.batches });
  await v1.register(suppressionsRoutes, { deps: services.suppressions });
  await v1.register(eventsRoutes, { deps: { db: services.db, clock: services.clock } });
  // An unknown path under /v1 is still an API request: authenticated, counted against the key's limit and
  // listed in the request log (where a mistyped URL is found), then answered 404 with the path named.
  v1.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new ApiError('not_found', `Unrecognized request URL: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`),
    ),
  );
};

/** A URL of the JSON API under /v1. */
function isApiUrl(url: string): boolean {
  return url === '/v1' || url.startsWith('/v1/') || url.startsWith('/v1?');
}

/**
 * The router turns some /v1 URLs away before any hook runs (a path parameter over its maxParamLength, a
 * malformed percent-encoding). They still pass the API's gate first, as every /v1 request does (the
 * OpenAPI document promises 401 without a valid key, and the rate-limit headers), and are written to the
 * request log of the key's account like an unknown path under /v1.
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

export function buildApp(services: Services): FastifyInstance {
  const { config } = services;
  const logger = services.logger as FastifyBaseLogger;
  const app = Fastify({
    ...serverOptions(config, logger),
    // Errors the router raises before any hook runs (a bad percent-encoding, an over-long path parameter);
    // the portal's pages answer them in HTML like their other errors.
    frameworkErrors: (error, request, reply) => {
      setStrictTransportSecurity(reply, config.strictTransportSecurity);
      if (isPortalUrl(request.url)) return void sendPortalFrameworkError(services, error, request, reply);
      if (isApiUrl(request.url)) return void sendApiFrameworkError(app, services, error, request, reply);
      return sendFrameworkError(error, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerJsonBodyParser(app);
  registerRequestEdge(app);
  registerStrictTransportSecurity(app, config.strictTransportSecurity);
  answerNodeEvents(app.server);
  registerAccessLog(app);
  registerErrorHandling(app);
  registerHttpMetrics(app, services.metrics);
  app.decorate('inFlight', trackHandlers(app));
  // First: it learns the routes added after it (GET /v1/openapi.json, GET /docs).
  registerOpenApi(app);

  app.register(healthRoutes, { db: services.db, dialect: services.database.dialect, publicUrl: config.publicUrl });
  app.register(readinessRoutes, { deps: services.readiness });
  // With a metrics port of its own, the metrics stay off the API port (see metrics.server.ts).
  if (config.metricsPort === undefined) app.register(metricsRoutes, { metrics: services.metrics, token: config.metricsToken });
  app.register(portalRoutes, { prefix: '/developers', deps: services });
  app.register(elevenLabsWebhookRoutes, {
    secret: config.elevenlabs.webhookSecret,
    deps: {
      db: services.db,
      clock: services.clock,
      logger,
      onOutcome: () => services.notifier.notify(),
      observeEnded: (call) => services.metrics.callEnded(call),
    },
  });
  app.register(apiRoutes, { prefix: '/v1', services });
  return app;
}
