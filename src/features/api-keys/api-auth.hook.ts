/**
 * The gate in front of every `/v1` route: authenticate the Bearer key (no cache, so revocation holds from
 * the next request on every process), then count the request against the key's per-minute limit. Requests
 * without a valid key are counted per client IP instead, so keys cannot be guessed at speed.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Db } from '../../db/database.js';
import { ApiError } from '../../errors/api-error.js';
import type { Clock } from '../../lib/clock.js';
import type { RateLimitDecision, RateLimiter } from '../rate-limit/rate-limit.interface.js';
import { rateLimitHeaders } from '../rate-limit/rate-limit.store.js';
import { authenticate, keyCounter } from './api-keys.service.js';
import type { AuthenticatedKey } from './api-keys.tables.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated API key of a `/v1` request. */
    apiKey: AuthenticatedKey | null;
  }
}

export interface ApiAuthDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly perKeyLimiter: RateLimiter;
  readonly perIpLimiter: RateLimiter;
}

/** RFC 9110 (11.6.1): a 401 names the scheme the client should use. */
function unauthorized(reply?: FastifyReply): ApiError {
  reply?.header('www-authenticate', 'Bearer realm="callgate"');
  return new ApiError('unauthorized');
}

function tooManyRequests(reply: FastifyReply, decision: RateLimitDecision, policy: string): ApiError {
  const seconds = Math.max(1, decision.resetSeconds);
  reply.headers(rateLimitHeaders(decision, policy));
  return new ApiError(
    'rate_limit_exceeded',
    `Rate limit of ${decision.limit} requests per ${decision.windowSeconds} seconds exceeded. Retry after ${seconds} seconds.`,
    { retryAfterSeconds: seconds },
  );
}

function hasOneAuthorization(rawHeaders: readonly string[]): boolean {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index]!.length === 13 && rawHeaders[index]!.toLowerCase() === 'authorization') count++;
  }
  return count <= 1;
}

export function apiAuthHook(deps: ApiAuthDeps): onRequestAsyncHookHandler {
  return async function apiAuth(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Node keeps the first of several Authorization headers; which key was meant is ambiguous, so none is.
    // On PostgreSQL the key is read by the limiter's statement, which counts the request too (one round trip).
    const authenticated = hasOneAuthorization(request.raw.rawHeaders)
      ? await authenticate(deps.db, deps.clock, request.headers.authorization, deps.perKeyLimiter.countWith)
      : null;
    if (!authenticated) {
      const ipDecision = await deps.perIpLimiter.consume(`ip:${request.ip}`);
      if (!ipDecision.allowed) throw tooManyRequests(reply, ipDecision, 'per-ip');
      throw unauthorized(reply);
    }
    // Known before the limit is checked, so a refused request still shows in the account's request log.
    request.apiKey = authenticated.key;
    const decision = authenticated.counted ?? (await deps.perKeyLimiter.consume(keyCounter(authenticated.key.id)));
    if (!decision.allowed) throw tooManyRequests(reply, decision, 'per-key');
    reply.headers(rateLimitHeaders(decision, 'per-key'));
  };
}

/** Puts the gate in front of every route of `scope` (the /v1 API). */
export function registerApiAuth(scope: FastifyInstance, deps: ApiAuthDeps): void {
  scope.decorateRequest('apiKey', null);
  scope.addHook('onRequest', apiAuthHook(deps));
}

/** The authenticated key of a request that passed the gate (which refused, with its headers, any other). */
export function requireApiKey(request: FastifyRequest): AuthenticatedKey {
  if (!request.apiKey) throw unauthorized();
  return request.apiKey;
}
