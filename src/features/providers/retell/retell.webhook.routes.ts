import type { FastifyPluginAsync } from 'fastify';
import { headerOf, signedWebhookRoutes } from '../provider-webhook.routes.js';
import type { ProviderWebhookDeps } from '../provider-webhook.deps.js';
import { parseRetellSignature, verifyRetellSignature } from './retell.signature.js';
import { handleRetellWebhook } from './retell.webhook.service.js';

/** `POST /providers/retell/webhook`: signed with the Retell API key (`x-retell-signature`), answered 200 fast. */
export function retellWebhookRoutes(deps: Omit<ProviderWebhookDeps, 'logger'>, apiKey: string | undefined): FastifyPluginAsync {
  return signedWebhookRoutes({
    path: '/providers/retell/webhook',
    label: 'Retell',
    clock: deps.clock,
    notConfigured: apiKey ? undefined : 'Retell webhooks are not configured on this server (RETELL_API_KEY is not set).',
    checkHeaders: (request, nowMs) => {
      const parsed = parseRetellSignature(headerOf(request, 'x-retell-signature'), nowMs);
      return 'refusal' in parsed ? parsed.refusal : undefined;
    },
    verify: (request, raw, nowMs) => verifyRetellSignature(apiKey ?? '', headerOf(request, 'x-retell-signature'), raw, nowMs),
    handle: (payload, logger) => handleRetellWebhook({ ...deps, logger }, payload),
  });
}
