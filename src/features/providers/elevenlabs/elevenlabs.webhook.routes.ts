import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../../errors/error-handler.js';
import { verifyElevenLabsSignature } from './elevenlabs.signature.js';
import { handleElevenLabsWebhook, type ElevenLabsWebhookDeps } from './elevenlabs.webhook.service.js';

/** Their `post_call_audio` carries the whole recording as base64; we acknowledge it, so it must fit. */
const webhookBodyLimitBytes = 64 * 1024 * 1024;

/** `POST /providers/elevenlabs/webhook`: verified on the raw body, answered 200 fast. */
export const elevenLabsWebhookRoutes: FastifyPluginAsync<{ deps: ElevenLabsWebhookDeps; secret: string | undefined }> = async (
  app,
  { deps, secret },
) => {
  // The signature covers the exact bytes, so this scope keeps bodies as text whatever their content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: webhookBodyLimitBytes }, (_request, body, done) => done(null, body));

  app.post('/providers/elevenlabs/webhook', { bodyLimit: webhookBodyLimitBytes }, async (request, reply) => {
    if (!secret) {
      throw new ApiError('provider_unavailable', 'ElevenLabs webhooks are not configured on this server (ELEVENLABS_WEBHOOK_SECRET is not set).');
    }
    const raw = typeof request.body === 'string' ? request.body : '';
    const header = request.headers['elevenlabs-signature'];
    const check = verifyElevenLabsSignature(secret, Array.isArray(header) ? header[0] : header, raw, deps.clock.now().getTime());
    if (!check.ok) {
      request.log.warn({ reason: check.reason }, 'ElevenLabs webhook refused');
      throw new ApiError('unauthorized', `The ElevenLabs-Signature header is ${check.reason === 'stale' ? 'too old' : check.reason === 'missing' ? 'missing' : 'invalid'}.`);
    }
    let payload: unknown;
    try {
      payload = JSON.parse(raw);
    } catch {
      throw new ApiError('invalid_json');
    }
    const handling = await handleElevenLabsWebhook(deps, payload);
    return reply.code(200).send({ received: true, handling });
  });
  registerMethodNotAllowed(app, '/providers/elevenlabs/webhook', ['POST']);
};
