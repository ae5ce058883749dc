/**
 * The HTTP side of every provider's signed webhook, one route per catalogue entry at its entry's path: the
 * body is kept as the exact bytes the signature covers, the signature headers are checked before the body is read (a request that cannot be
 * right is answered at once, its body never buffered), then the signature over the raw body, then the JSON.
 * Anything unsigned, forged, tampered or stale is a 401 and changes nothing.
 */
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { nestsDeeperThan } from '../../http/json-body.js';
import { providerCatalogue, type ProviderSettingsByName } from './provider-catalogue.js';
import type { ProviderWebhook } from './provider-entry.js';
import type { ProviderWebhookDeps } from './provider-webhook.deps.js';

/** Deeper than any provider payload (a transcript's tool calls nest some levels), far below a stack. */
const providerJsonMaxDepth = 64;
/**
 * A call's report is JSON text: its transcript, analysis and metadata, some kilobytes a minute of
 * conversation (well under 1 MB for an hour with tool calls), so 10 MB leaves ample room. ElevenLabs'
 * `post_call_audio` (the whole recording as base64) is not used and answered 413 when over it (see
 * docs/providers.md): four concurrent 60 MB unsigned bodies took the process from 350 to 700 MB before the
 * signature was even looked at, when the limit was 64 MB.
 */
export const providerWebhookBodyLimitBytes = 10 * 1024 * 1024;

/** One provider's webhook on the shared route: `label` names it in log lines. */
function signedWebhookRoutes(label: string, route: ProviderWebhook, deps: WebhookRouteDeps): FastifyPluginAsync {
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
      request.log.warn({ reason: message }, `${label} webhook refused`);
      throw new ApiError('unauthorized', message);
    };

    const checkHeaders = async (request: FastifyRequest) => {
      if (route.notConfigured) throw new ApiError('provider_unavailable', route.notConfigured);
      const refusal = route.checkHeaders(request, deps.clock.now().getTime());
      if (refusal) refuse(request, refusal);
    };

    app.post(route.path, { bodyLimit: providerWebhookBodyLimitBytes, onRequest: checkHeaders }, async (request, reply) => {
      const raw = typeof request.body === 'string' ? request.body : '';
      const refusal = route.verify(request, raw, deps.clock.now().getTime());
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
      const handling = await route.handle({ ...deps, logger: request.log }, payload);
      return reply.code(200).send({ received: true, handling });
    });
    registerMethodNotAllowed(app, route.path, ['POST']);
  };
}

/** What the webhook routes hand each provider's handler, beside the request's logger. */
export type WebhookRouteDeps = Omit<ProviderWebhookDeps, 'logger'>;

/** `POST /providers/<name>/webhook` for every provider of the catalogue, each verified as its entry says. */
export const providerWebhookRoutes: FastifyPluginAsync<{ providers: ProviderSettingsByName; deps: WebhookRouteDeps }> = async (
  app,
  { providers, deps },
) => {
  for (const entry of providerCatalogue) {
    await app.register(signedWebhookRoutes(entry.label, entry.webhook(providers[entry.name]), deps));
  }
};
