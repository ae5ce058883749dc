/**
 * API-key authentication of every `/v1` request: the Bearer key is looked up on each request (no cache, so
 * a revocation holds from the next request on every process). The gate is three onRequest hooks, in this
 * order: `identifyApiKey` (here), the rate limit (rate-limit.plugin.ts: per key, or per client IP without a
 * valid key, so keys cannot be guessed at speed), then `refuseWithoutApiKey` (here), the 401.
 */
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Db } from '../db/database.js';
import { ApiError } from '../errors/api-error.js';
import type { Clock } from '../lib/clock.js';
import { authenticate } from '../features/api-keys/api-keys.service.js';
import type { ApiKeyRow } from '../features/api-keys/api-keys.tables.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated API key of a `/v1` request. */
    apiKey: ApiKeyRow | null;
  }
}

export interface ApiAuthDeps {
  readonly db: Db;
  readonly clock: Clock;
}

/** RFC 9110 (11.6.1): a 401 names the scheme the client should use. */
function unauthorized(reply?: FastifyReply): ApiError {
  reply?.header('www-authenticate', 'Bearer realm="callgate"');
  return new ApiError('unauthorized');
}

function hasOneAuthorization(rawHeaders: readonly string[]): boolean {
  let count = 0;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index]!.length === 13 && rawHeaders[index]!.toLowerCase() === 'authorization') count++;
  }
  return count <= 1;
}

/** Sets `request.apiKey` to the active key of the request's Authorization header, or null. */
export function identifyApiKey(deps: ApiAuthDeps): onRequestAsyncHookHandler {
  return async function identifyApiKey(request: FastifyRequest): Promise<void> {
    // Node keeps the first of several Authorization headers; which key was meant is ambiguous, so none is.
    request.apiKey = hasOneAuthorization(request.raw.rawHeaders)
      ? await authenticate(deps.db, deps.clock, request.headers.authorization)
      : null;
  };
}

/** The 401 of a request without a valid key, once the rate limit has counted it per client IP. */
export const refuseWithoutApiKey: onRequestAsyncHookHandler = async function refuseWithoutApiKey(request, reply) {
  if (!request.apiKey) throw unauthorized(reply);
};

/** The authenticated key of a request that passed the gate (which refused, with its headers, any other). */
export function requireApiKey(request: FastifyRequest): ApiKeyRow {
  if (!request.apiKey) throw unauthorized();
  return request.apiKey;
}

/** Identifies the key of every request of the scope it is registered in; `refuseWithoutApiKey` refuses. */
export default fp<ApiAuthDeps>(
  async (app, deps) => {
    app.decorateRequest('apiKey', null);
    app.addHook('onRequest', identifyApiKey(deps));
  },
  { name: 'callgate-api-auth', fastify: '5.x' },
);
