/**
 * The small HTTP server of CALLGATE_METRICS_PORT: `/metrics`, `/readyz` and `/healthz` only, in every process
 * that sets it, worker-only ones included (they have no API port, so their probes are here). Kept apart from the API so that the metrics can
 * listen on an address the internet does not reach; the API port then serves neither path's metrics.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Services } from '../../container.js';
import errorHandler from '../../http/error-handler.plugin.js';
import requestEdge from '../../http/request-edge.plugin.js';
import { serverOptions } from '../../http/server-options.js';
import { livenessRoutes } from '../health/health.routes.js';
import { readinessRoutes } from '../health/readiness.routes.js';
import { metricsRoutes } from './metrics.routes.js';

export function buildMetricsApp(services: Services): FastifyInstance {
  const app = Fastify(serverOptions(services.config, services.logger as FastifyBaseLogger));
  app.register(requestEdge);
  app.register(errorHandler);
  app.register(metricsRoutes, { metrics: services.metrics, token: services.config.metricsToken });
  app.register(readinessRoutes, { deps: services.readiness });
  app.register(livenessRoutes, { db: services.db });
  return app;
}
