/**
 * The HTTP side of a provider's signed webhook (Retell's, Vapi's): the body is kept as the exact bytes the
 * signature covers, the signature headers are checked before the body is read (a request that cannot be
 * right is answered at once, its body never buffered), then the signature over the raw body, then the JSON.
 * Anything unsigned, forged, tampered or stale is a 401 and changes nothing.
 */
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { nestsDeeperThan } from '../../http/json-body.js';
import type { Clock } from '../../lib/clock.js';

/** Deeper than any provider payload (a transcript's tool calls nest some levels), far below a stack. */
const providerJsonMaxDepth = 64;
/** A call's report is JSON text: its transcript, analysis and metadata; 10 MB leaves ample room. */
export const providerWebhookBodyLimitBytes = 10 * 1024 * 1024;

/** The first value of a request header. */
export function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export interface SignedWebhookRoute {
  readonly path: string;
  /** The provider's name in log lines. */
  readonly label: string;
  readonly clock: Clock;
  /** Why the server cannot take this provider's webhooks (a secret not set), or undefined when it can. */
  readonly notConfigured: string | undefined;
  /** A refusal from the headers alone (missing, malformed, out of the time tolerance), or undefined. */
  checkHeaders(request: FastifyRequest, nowMs: number): string | undefined;
  /** A refusal of the signature over the raw body, or undefined when it matches. */
  verify(request: FastifyRequest, raw: string, nowMs: number): string | undefined;
  /** Acts on the verified payload; what it did is answered as `handling`. */
  handle(payload: unknown, logger: FastifyBaseLogger): Promise<string>;
}

export function signedWebhookRoutes(route: SignedWebhookRoute): FastifyPluginAsync {
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: providerWebhookBodyLimitBytes }, (_request, body, done) =>
      done(null, body),
    );
    // The catalogue's 413 speaks of the API's 64 KB; this route's limit is its own.
    app.setErrorHandler((error) => {
      if ((error as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
        throw new ApiError('payload_too_large', `The webhook body is larger than ${providerWebhookBodyLimitBytes / 1024 / 1024} MB.`);
      }
      throw error;
    });

    const refuse = (request: FastifyRequest, message: string): never => {
      request.log.warn({ reason: message }, `${route.label} webhook refused`);
      throw new ApiError('unauthorized', message);
    };

    const checkHeaders = async (request: FastifyRequest) => {
      if (route.notConfigured) throw new ApiError('provider_unavailable', route.notConfigured);
      const refusal = route.checkHeaders(request, route.clock.now().getTime());
      if (refusal) refuse(request, refusal);
    };

    app.post(route.path, { bodyLimit: providerWebhookBodyLimitBytes, onRequest: checkHeaders }, async (request, reply) => {
      const raw = typeof request.body === 'string' ? request.body : '';
      const refusal = route.verify(request, raw, route.clock.now().getTime());
      if (refusal) refuse(request, refusal);
      // Signed is not sane: no depth of nesting reaches a parser or a walk.
      if (nestsDeeperThan(raw, providerJsonMaxDepth)) {
        throw new ApiError(
          'invalid_request',
          `The webhook body is nested deeper than ${providerJsonMaxDepth} levels of arrays and objects.`,
        );
      }
      let payload: unknown;
      try {
        payload = JSON.parse(raw);
      } catch {
        throw new ApiError('invalid_json');
      }
      // The request's logger, so that what the service logs carries the request id.
      const handling = await route.handle(payload, request.log);
      return reply.code(200).send({ received: true, handling });
    });
    registerMethodNotAllowed(app, route.path, ['POST']);
  };
}
