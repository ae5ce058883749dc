import type { FastifyPluginAsync } from 'fastify';
import { ApiError } from '../../../errors/api-error.js';
import { registerMethodNotAllowed } from '../../../errors/error-handler.js';
import { verifyElevenLabsSignature, type SignatureFailure } from './elevenlabs.signature.js';
import { handleElevenLabsWebhook, type ElevenLabsWebhookDeps } from './elevenlabs.webhook.service.js';

/** Their `post_call_audio` carries the whole recording as base64; we acknowledge it, so it must fit. */
const webhookBodyLimitBytes = 64 * 1024 * 1024;

const refusals: Record<SignatureFailure, string> = {
  missing: 'The ElevenLabs-Signature header is missing.',
  malformed: 'The ElevenLabs-Signature header is invalid.',
  mismatch: 'The ElevenLabs-Signature header is invalid.',
  stale: 'The ElevenLabs-Signature header is too old (more than 30 minutes).',
  future: "The ElevenLabs-Signature timestamp is more than 30 minutes ahead of this server's clock.",
};

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
      throw new ApiError('unauthorized', refusals[check.reason]);
    }
    let payload: unknown;
    try {
      payload = JSON.parse(raw);
    } catch {
      throw new ApiError('invalid_json');
    }
    // The request's logger, so that what the service logs (an unknown conversation) carries the request id.
    const handling = await handleElevenLabsWebhook({ ...deps, logger: request.log }, payload);
    return reply.code(200).send({ received: true, handling });
  });
  registerMethodNotAllowed(app, '/providers/elevenlabs/webhook', ['POST']);
};
