import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ApiError } from '../../../errors/api-error.js';
import { nestsDeeperThan } from '../../../http/json-body.js';
import { registerMethodNotAllowed } from '../../../errors/error-handler.js';
import { parseSignatureHeader, verifyElevenLabsSignature, type SignatureFailure } from './elevenlabs.signature.js';
import { handleElevenLabsWebhook, type ElevenLabsWebhookDeps } from './elevenlabs.webhook.service.js';

/** Deeper than any post-call payload (a transcript's tool calls nest under ten levels), far below a stack. */
const providerJsonMaxDepth = 64;

/**
 * The largest body read. A post_call_transcription is JSON text: the whole transcript, analysis and
 * metadata, some kilobytes a minute of conversation (well under 1 MB for an hour with tool calls), so
 * 10 MB leaves ample room. It used to be 64 MB to fit `post_call_audio` (the whole recording as base64),
 * which callgate does not use: do not enable the audio events for its webhook (see docs/providers.md); a
 * recording over this size is answered 413. Four concurrent 60 MB unsigned bodies took the process from
 * 350 to 700 MB before the signature was even looked at.
 */
export const webhookBodyLimitBytes = 10 * 1024 * 1024;

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

  // The catalogue's 413 speaks of the API's 64 KB; this route's limit is its own. Anything else goes on to
  // the app's error handler.
  app.setErrorHandler((error) => {
    if ((error as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      throw new ApiError('payload_too_large', `The webhook body is larger than ${webhookBodyLimitBytes / 1024 / 1024} MB.`);
    }
    throw error;
  });

  // Before the body is read: a request with no secret configured, or whose signature header cannot match
  // any body (missing, malformed, out of the time tolerance), is answered at once, its body never buffered.
  const checkHeader = async (request: FastifyRequest) => {
    if (!secret) {
      throw new ApiError(
        'provider_unavailable',
        'ElevenLabs webhooks are not configured on this server (ELEVENLABS_WEBHOOK_SECRET is not set).',
      );
    }
    const header = request.headers['elevenlabs-signature'];
    const parsed = parseSignatureHeader(Array.isArray(header) ? header[0] : header, deps.clock.now().getTime());
    if ('failure' in parsed) {
      request.log.warn({ reason: parsed.failure }, 'ElevenLabs webhook refused');
      throw new ApiError('unauthorized', refusals[parsed.failure]);
    }
  };

  app.post('/providers/elevenlabs/webhook', { bodyLimit: webhookBodyLimitBytes, onRequest: checkHeader }, async (request, reply) => {
    if (!secret) throw new ApiError('provider_unavailable');
    const raw = typeof request.body === 'string' ? request.body : '';
    const header = request.headers['elevenlabs-signature'];
    const check = verifyElevenLabsSignature(secret, Array.isArray(header) ? header[0] : header, raw, deps.clock.now().getTime());
    if (!check.ok) {
      request.log.warn({ reason: check.reason }, 'ElevenLabs webhook refused');
      throw new ApiError('unauthorized', refusals[check.reason]);
    }
    // Signed is not sane: no depth of nesting reaches a parser or a walk (their payloads nest a few levels).
    if (nestsDeeperThan(raw, providerJsonMaxDepth)) {
      throw new ApiError('invalid_request', `The webhook body is nested deeper than ${providerJsonMaxDepth} levels of arrays and objects.`);
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
