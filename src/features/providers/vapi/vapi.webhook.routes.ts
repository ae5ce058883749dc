import type { FastifyPluginAsync } from 'fastify';
import { headerOf, signedWebhookRoutes } from '../provider-webhook.routes.js';
import type { ProviderWebhookDeps } from '../provider-webhook.deps.js';
import { parseVapiSignature, verifyVapiSignature } from './vapi.signature.js';
import { handleVapiWebhook } from './vapi.webhook.service.js';

/** `POST /providers/vapi/webhook`: Vapi's server messages, HMAC-signed with VAPI_WEBHOOK_SECRET, answered 200 fast. */
export function vapiWebhookRoutes(deps: Omit<ProviderWebhookDeps, 'logger'>, secret: string | undefined): FastifyPluginAsync {
  return signedWebhookRoutes({
    path: '/providers/vapi/webhook',
    label: 'Vapi',
    clock: deps.clock,
    notConfigured: secret ? undefined : 'Vapi webhooks are not configured on this server (VAPI_WEBHOOK_SECRET is not set).',
    checkHeaders: (request, nowMs) => {
      const parsed = parseVapiSignature(headerOf(request, 'x-signature'), headerOf(request, 'x-timestamp'), nowMs);
      return 'refusal' in parsed ? parsed.refusal : undefined;
    },
    verify: (request, raw, nowMs) =>
      verifyVapiSignature(secret ?? '', headerOf(request, 'x-signature'), headerOf(request, 'x-timestamp'), raw, nowMs),
    handle: (payload, logger) => handleVapiWebhook({ ...deps, logger }, payload),
  });
}
