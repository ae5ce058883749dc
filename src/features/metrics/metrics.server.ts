/**
 * The small HTTP server of CALLGATE_METRICS_PORT: `/metrics`, `/readyz` and `/healthz` only, in every process
 * that sets it, worker-only ones included (they have no API port, so their probes are here). Kept apart from the API so that the metrics can
 * listen on an address the internet does not reach; the API port then serves neither path's metrics.
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import errorHandler from '../../http/error-handler.plugin.js';
import requestEdge from '../../http/request-edge.plugin.js';
import { serverOptions } from '../../http/server-options.js';
import { livenessRoutes } from '../health/health.routes.js';
import { readinessRoutes } from '../health/readiness.routes.js';
import type { ReadinessDeps } from '../health/readiness.service.js';
import type { Metrics } from './metrics.js';
import { metricsRoutes } from './metrics.routes.js';

/** What the metrics server is built from: a part of the process's services, which the server passes whole. */
export interface MetricsAppDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly db: Db;
  readonly metrics: Metrics;
  readonly readiness: ReadinessDeps;
}

export function buildMetricsApp(services: MetricsAppDeps): FastifyInstance {
  const app = Fastify(serverOptions(services.config, services.logger as FastifyBaseLogger));
  app.register(requestEdge);
  app.register(errorHandler);
  app.register(metricsRoutes, { metrics: services.metrics, token: services.config.metricsToken });
  app.register(readinessRoutes, { deps: services.readiness });
  app.register(livenessRoutes, { db: services.db });
  return app;
}
