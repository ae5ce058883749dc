/** One access-log line per request, once it is answered (Fastify's own request logging, two lines, is off). */
import type { FastifyInstance } from 'fastify';

export function registerAccessLog(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.url.slice(0, 200), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });
}
