/**
 * What every request meets first, in one onRequest hook: its id in `X-Request-Id`, a 503 once shutdown has
 * begun, and the Host rule of HTTP/1.1.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors/api-error.js';
import { sendError } from '../errors/error-handler.js';

/** How many Host lines a request has (Node keeps the first of several in `headers`, all in rawHeaders). */
function hostHeaderCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

export function registerRequestEdge(app: FastifyInstance): void {
  // Set when close() begins (Fastify runs preClose hooks once it stops routing new work to handlers).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) {
      // A request on a connection kept alive across the shutdown: the client should go elsewhere or come back.
      reply.header('connection', 'close');
      return sendError(request, reply, new ApiError('service_unavailable', undefined, { retryAfterSeconds: 1 }));
    }
    // HTTP/1.1 requires exactly one Host (RFC 9112 3.2); HTTP/1.0 did not have it.
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      return sendError(
        request,
        reply,
        new ApiError('invalid_request', 'An HTTP/1.1 request needs a Host header. Send Host with the server name.'),
      );
    }
    if (hostHeaderCount(request.raw.rawHeaders) > 1) {
      return sendError(request, reply, new ApiError('invalid_request', 'The request has more than one Host header. Send Host once.'));
    }
  });
}
