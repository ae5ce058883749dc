/**
 * Composes the HTTP application from the edge's plugins and the features. No process concerns here (see
 * server.ts), so tests build the very same app and drive it with `inject` or a real port.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync } from 'fastify';
import type { Services } from './container.js';
import apiAuth, { refuseWithoutApiKey } from './http/api-auth.plugin.js';
import { agentsRoutes } from './features/agents/agents.routes.js';
import { batchesRoutes } from './features/batches/batches.routes.js';
import { callsRoutes } from './features/calls/calls.routes.js';
import { eventsRoutes } from './features/events/events.routes.js';
import { healthRoutes } from './features/health/health.routes.js';
import { readinessRoutes } from './features/health/readiness.routes.js';
import httpMetrics from './http/http-metrics.plugin.js';
import { metricsRoutes } from './features/metrics/metrics.routes.js';
import { openApiRoutes } from './features/openapi/openapi.routes.js';
import { providerWebhookRoutes } from './features/providers/provider-webhook.routes.js';
import requestLog from './http/request-log.plugin.js';
import { suppressionsRoutes } from './features/suppressions/suppressions.routes.js';
import { webhookEndpointsRoutes } from './features/webhook-delivery/endpoints-api.routes.js';
import accessLog from './http/access-log.plugin.js';
import { answerFrameworkError, unknownApiPathHandler } from './http/api-edge.js';
import type { KnownRoute } from './http/route-suggestion.js';
import clientErrors from './http/client-errors.plugin.js';
import errorHandler from './http/error-handler.plugin.js';
import inFlight from './http/in-flight.plugin.js';
import jsonBody from './http/json-body.plugin.js';
import nulInQuery from './http/nul-in-query.plugin.js';
import requestEdge from './http/request-edge.plugin.js';
import securityHeaders from './http/security-headers.plugin.js';
import idempotency from './http/idempotency.plugin.js';
import rateLimit from './http/rate-limit.plugin.js';
import { serverOptions } from './http/server-options.js';
import { portalFaviconRoutes } from './portal/portal-favicon.routes.js';
import { portalRoutes } from './portal/portal.routes.js';

/** The JSON API under /v1: every request authenticated, counted and logged, unknown paths included. */
const apiRoutes: FastifyPluginAsync<{ services: Services }> = async (v1, { services }) => {
  // Learned as they are added: an unknown path's 404 names the closest of them.
  const routes: KnownRoute[] = [];
  v1.addHook('onRoute', (route) => {
    if (route.config?.methodNotAllowed) return;
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
  // The gate: the key identified, the request counted (per key, or per client IP without one), then a 401 without a key.
  await v1.register(apiAuth, { db: services.db, clock: services.clock });
  await v1.register(rateLimit, { perKeyLimiter: services.perKeyLimiter, perIpLimiter: services.perIpLimiter });
  v1.addHook('onRequest', refuseWithoutApiKey);
  // Before the routes: it learns each creating route that turns it on.
  await v1.register(idempotency, services.calls);
  await v1.register(nulInQuery);
  await v1.register(requestLog, { writer: services.requestLog });
  await v1.register(callsRoutes, { deps: services.calls });
  await v1.register(agentsRoutes, { deps: { db: services.db } });
  await v1.register(batchesRoutes, { deps: services.batches });
  await v1.register(suppressionsRoutes, { deps: services.suppressions });
  await v1.register(eventsRoutes, { deps: { db: services.db, clock: services.clock } });
  await v1.register(webhookEndpointsRoutes, {
    deps: { db: services.db, clock: services.clock, allowPrivate: services.config.webhookAllowPrivate },
  });
  v1.setNotFoundHandler(unknownApiPathHandler(routes));
};

export function buildApp(services: Services): FastifyInstance {
  const { config } = services;
  const logger = services.logger as FastifyBaseLogger;
  const app: FastifyInstance = Fastify({
    ...serverOptions(config, logger),
    // Errors the router raises before any hook runs (a bad percent-encoding, an over-long path parameter).
    frameworkErrors: (error, request, reply) => answerFrameworkError(app, services, error, request, reply),
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.register(jsonBody);
  app.register(requestEdge);
  app.register(securityHeaders, { strictTransportSecurity: config.strictTransportSecurity });
  app.register(clientErrors);
  app.register(accessLog);
  app.register(errorHandler);
  app.register(httpMetrics, { metrics: services.metrics });
  app.register(inFlight);
  // First of the routes: it learns the routes added after it (GET /v1/openapi.json, GET /docs).
  app.register(openApiRoutes);

  app.register(healthRoutes, { db: services.db, publicUrl: config.publicUrl });
  app.register(readinessRoutes, { deps: services.readiness });
  // With a metrics port of its own, the metrics stay off the API port (see metrics.server.ts).
  if (config.metricsPort === undefined) app.register(metricsRoutes, { metrics: services.metrics, token: config.metricsToken });
  app.register(portalRoutes, { prefix: '/developers', deps: services });
  app.register(portalFaviconRoutes);
  const webhookDeps = {
    db: services.db,
    clock: services.clock,
    onOutcome: () => services.notifier.notify(),
    observeEnded: (call: Parameters<typeof services.metrics.callEnded>[0]) => services.metrics.callEnded(call),
    onCheckDue: (callId: string, at: Date) => services.callMonitor.schedule(callId, at),
  };
  // Every provider of the catalogue at /providers/<name>/webhook.
  app.register(providerWebhookRoutes, { providers: config.providers, deps: webhookDeps });
  app.register(apiRoutes, { prefix: '/v1', services });
  return app;
}
