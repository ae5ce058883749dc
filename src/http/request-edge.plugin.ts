/**
 * What every request meets first, in one onRequest hook: its id in `X-Request-Id`, a 503 once shutdown has
 * begun, and the Host rule of HTTP/1.1.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';
import { sendError } from '../errors/error-handler.js';

/** How many Host lines a request has (Node keeps the first of several in `headers`, all in rawHeaders). */
function hostHeaderCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

async function requestEdge(app: FastifyInstance): Promise<void> {
  // Set when close() begins (Fastify runs preClose hooks once it stops routing new work to handlers).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // A callback hook, not an async one: every request runs it, and an async hook costs a promise and a turn.
  // A refusal answers here and does not call `done`, so nothing else runs for the request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      // A request on a connection kept alive across the shutdown: the client should go elsewhere or come back.
      reply.header('connection', 'close');
      sendError(request, reply, new ApiError('service_unavailable', undefined, { retryAfterSeconds: 1 }));
      return;
    }
    // HTTP/1.1 requires exactly one Host (RFC 9112 3.2); HTTP/1.0 did not have it.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      sendError(
        request,
        reply,
        new ApiError('invalid_request', 'An HTTP/1.1 request needs a Host header. Send Host with the server name.'),
      );
      return;
    }
    if (hostHeaderCount(request.raw.rawHeaders) > 1) {
      sendError(request, reply, new ApiError('invalid_request', 'The request has more than one Host header. Send Host once.'));
      return;
    }
    done();
  });
}

export default fp(requestEdge, { name: 'request-edge' });
