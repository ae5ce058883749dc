/** One access-log line per request, once it is answered (Fastify's own request logging, two lines, is off). */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

async function accessLog(app: FastifyInstance): Promise<void> {
  const logger = app.log;
  // A callback hook, not an async one: every request runs it, and an async hook costs a promise and a turn.
  app.addHook('onResponse', (request, reply, done) => {
    // The root logger with the request's id first: the very line `request.log` would write, without making
    // the request's child logger (request-logger.ts), which most requests then never need.
    logger.info(
      {
        reqId: request.id,
        method: request.method,
        url: request.url.slice(0, 200),
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
    done();
  });
}

export default fp(accessLog, { name: 'access-log' });
