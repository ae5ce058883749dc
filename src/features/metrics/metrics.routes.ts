/**
 * `GET /metrics` in the Prometheus text format. With CALLGATE_METRICS_TOKEN set it needs
 * `Authorization: Bearer <token>`, compared in constant time; without, it is open (keep it off the
 * internet then: CALLGATE_METRICS_PORT on a private address, or the proxy refusing the path).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import type { Metrics } from './metrics.js';

/** Compares digests, so neither the token's length nor its bytes show in the time taken. */
function sameToken(sent: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(sent), digest(expected));
}

export function metricsAuthorized(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const match = /^Bearer (.+)$/i.exec(authorization ?? '');
  return match !== null && sameToken(match[1]!, token);
}

export const metricsRoutes: FastifyPluginAsync<{ metrics: Metrics; token: string | undefined }> = async (app, { metrics, token }) => {
  app.get('/metrics', async (request, reply) => {
    if (!metricsAuthorized(request.headers.authorization, token)) {
      reply.header('www-authenticate', 'Bearer realm="callgate metrics"');
      throw new ApiError('unauthorized', 'Missing or wrong metrics token: send Authorization: Bearer <CALLGATE_METRICS_TOKEN>.');
    }
    const { contentType, body } = await metrics.exposition();
    return reply.header('cache-control', 'no-store').type(contentType).send(body);
  });
  registerMethodNotAllowed(app, '/metrics', ['GET']);
};
