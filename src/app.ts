/**
 * Composes the HTTP application from its features. No process concerns here (see server.ts), so tests
 * build the very same app and drive it with `inject` or a real port.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Services } from './container.js';
import { ApiError } from './errors/api-error.js';
import { registerErrorHandling, sendError, sendFrameworkError } from './errors/error-handler.js';
import { apiAuthHook } from './features/api-keys/api-auth.hook.js';
import { callsRoutes } from './features/calls/calls.routes.js';
import { healthRoutes } from './features/health/health.routes.js';
import { isPortalUrl, portalRoutes, sendPortalFrameworkError } from './features/portal/portal.routes.js';
import { elevenLabsWebhookRoutes } from './features/providers/elevenlabs/elevenlabs.webhook.routes.js';
import { requestLogHook } from './features/request-log/request-log.hook.js';
import { answerClientError, answerConnect, answerExpectation } from './http/client-errors.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { trackHandlers, type InFlightHandlers } from './http/in-flight.js';
import { refuseNulInQuery } from './http/nul-text.js';
import { newId } from './lib/ids.js';

/** Spec: bodies over 64 KB are refused with 413 `payload_too_large`. */
export const bodyLimitBytes = 64 * 1024;

/** How often Node looks for connections past their headers or request timeout (its default is 30 s). */
const connectionsCheckingIntervalMs = 1_000;

/** How many Host lines a request has (Node keeps the first of several in `headers`, all in rawHeaders). */
function hostHeaderCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Route handlers still running; shutdown waits for them before it closes the database. */
    inFlight: InFlightHandlers;
  }
}

export function buildApp(services: Services): FastifyInstance {
  const { config } = services;
  const app = Fastify({
    loggerInstance: services.logger as FastifyBaseLogger,
    bodyLimit: bodyLimitBytes,
    // Slow clients (headers or a body trickled a byte at a time) are cut off at these limits with a 408, so a
    // few hundred of them cannot hold a process's connections; the time to answer does not count.
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(connectionsCheckingIntervalMs, config.headersTimeoutMs),
      // A missing Host is answered below in our JSON shape, not by Node with an empty 400.
      requireHostHeader: false,
    },
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    trustProxy: services.config.trustProxy,
    // Request ids are ours: a client-sent X-Request-Id is not trusted.
    requestIdHeader: false,
    genReqId: () => newId('request'),
    // One access-log line per request (below) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    ajv: {
      // Validate exactly what was sent: no type coercion, no silent removal of unknown fields.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, allowUnionTypes: true },
    },
    // Fastify's own answer to a request that arrives while the server closes is not in the catalogue's
    // shape; the onRequest hook below answers it instead.
    return503OnClosing: false,
    // A request Node's HTTP parser refuses (bad header bytes, broken framing) still gets a JSON answer.
    clientErrorHandler: answerClientError,
    // Errors the router raises before any hook runs (a bad percent-encoding, an over-long path parameter);
    // the portal's pages answer them in HTML like their other errors.
    frameworkErrors: (error, request, reply) => {
      // No hook runs for these, the onSend below included.
      if (config.strictTransportSecurity !== undefined) reply.header('strict-transport-security', config.strictTransportSecurity);
      return isPortalUrl(request.url) ? void sendPortalFrameworkError(services, error, request, reply) : sendFrameworkError(error, request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The API speaks JSON only; Fastify's built-in text/plain parser would let plain text through to validation.
  app.removeContentTypeParser('text/plain');
  registerJsonBodyParser(app);
  app.decorateRequest('apiKey', null);
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
      return sendError(request, reply, new ApiError('invalid_request', 'An HTTP/1.1 request needs a Host header. Send Host with the server name.'));
    }
    if (hostHeaderCount(request.raw.rawHeaders) > 1) {
      return sendError(request, reply, new ApiError('invalid_request', 'The request has more than one Host header. Send Host once.'));
    }
  });
  const { strictTransportSecurity } = config;
  if (strictTransportSecurity !== undefined) {
    // Served at an https public URL: browsers keep to https for the portal and the API from then on.
    app.addHook('onSend', async (_request, reply) => {
      reply.header('strict-transport-security', strictTransportSecurity);
    });
  }
  // Events Node answers by itself, with an empty body or none, unless someone listens.
  app.server.on('checkExpectation', answerExpectation);
  app.server.on('connect', answerConnect);
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      { method: request.method, url: request.url.slice(0, 200), status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });
  registerErrorHandling(app);
  app.decorate('inFlight', trackHandlers(app));

  app.register(healthRoutes, { db: services.db, dialect: services.database.dialect, publicUrl: services.config.publicUrl });
  app.register(portalRoutes, { prefix: '/developers', deps: services });
  app.register(elevenLabsWebhookRoutes, {
    secret: services.config.elevenlabs.webhookSecret,
    deps: { db: services.db, clock: services.clock, logger: services.logger as FastifyBaseLogger, onOutcome: () => services.notifier.notify() },
  });
  app.register(
    async (v1) => {
      v1.addHook(
        'onRequest',
        apiAuthHook({
          db: services.db,
          clock: services.clock,
          perKeyLimiter: services.perKeyLimiter,
          perIpLimiter: services.perIpLimiter,
        }),
      );
      v1.addHook('preValidation', refuseNulInQuery);
      v1.addHook('onResponse', requestLogHook(services.requestLog));
      await v1.register(callsRoutes, { deps: services.calls });
      // An unknown path under /v1 is still an API request: authenticated, counted against the key's limit and
      // listed in the request log (where a mistyped URL is found), then answered 404 with the path named.
      v1.setNotFoundHandler((request, reply) =>
        sendError(request, reply, new ApiError('not_found', `Unrecognized request URL: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.`)),
      );
    },
    { prefix: '/v1' },
  );
  return app;
}
