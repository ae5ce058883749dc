/** One access-log line per request, once it is answered (Fastify's own request logging, two lines, is off). */
import type { FastifyInstance } from 'fastify';

export function registerAccessLog(app: FastifyInstance): void {
  // A callback hook, not an async one: every request runs it, and an async hook costs a promise and a turn.
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      { method: request.method, url: request.url.slice(0, 200), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
    done();
  });
}
