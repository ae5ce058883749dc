/**
 * The per-minute rate limits of the `/v1` API, counted after api-auth.plugin.ts identified the key: per API
 * key, or per client IP for a request without a valid key (which is then refused 401). Every answer past the
 * count carries the RateLimit fields; a refusal is 429 rate_limit_exceeded with Retry-After.
 */
import { spokenDuration } from '../lib/duration.js';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';
import type { RateLimitDecision, RateLimiter } from '../features/rate-limit/rate-limit.interface.js';
import { keyCounter } from '../features/api-keys/api-keys.service.js';
import { rateLimitHeaders } from '../features/rate-limit/rate-limit.store.js';

export interface RateLimitDeps {
  readonly perKeyLimiter: RateLimiter;
  readonly perIpLimiter: RateLimiter;
}

function tooManyRequests(reply: FastifyReply, decision: RateLimitDecision, policy: string): ApiError {
  const seconds = Math.max(1, decision.resetSeconds);
  reply.headers(rateLimitHeaders(decision, policy));
  return new ApiError(
    'rate_limit_exceeded',
    `Rate limit of ${decision.limit} requests per ${decision.windowSeconds} seconds exceeded. Retry after ${spokenDuration(seconds * 1000)}.`,
    { retryAfterSeconds: seconds },
  );
}

/** Counts the request against its key's limit, or its client IP's without a key. */
export function countRequest(deps: RateLimitDeps): onRequestAsyncHookHandler {
  return async function countRequest(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!request.apiKey) {
      const ipDecision = await deps.perIpLimiter.consume(`ip:${request.ip}`);
      if (!ipDecision.allowed) throw tooManyRequests(reply, ipDecision, 'per-ip');
      return;
    }
    const decision = await deps.perKeyLimiter.consume(keyCounter(request.apiKey.id));
    if (!decision.allowed) throw tooManyRequests(reply, decision, 'per-key');
    reply.headers(rateLimitHeaders(decision, 'per-key'));
  };
}

export default fp<RateLimitDeps>(
  async (app, deps) => {
    app.addHook('onRequest', countRequest(deps));
  },
  { name: 'callgate-rate-limit', fastify: '5.x', dependencies: ['callgate-api-auth'] },
);
