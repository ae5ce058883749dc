/**
 * The Idempotency-Key rules at the edge, for every route whose config says `idempotency: true` (spec 2.5 and
 * 4.1 rule 3), the same way for all: the key's scope (API key, method + route, key), the 400 for an invalid
 * key, replays with `Idempotent-Replayed: true` and the 409s, all before the handler. The handler's service
 * gets the held key as `request.idempotencyKey` and completes it in the transaction that stores its resource
 * (`completeKey`); any answer that is not such a success frees the key before it is sent, so an immediate
 * retry is processed anew rather than told "in progress".
 *
 * Such a route validates its body with attachValidation (set here): a body that breaks the schema still
 * meets the key's rules first (spec 4.1 rule 3.3: a known key with a different body is 409, whatever else
 * is wrong with it).
 */
import type { FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';
import {
  claimFor,
  endHold,
  readIdempotencyKey,
  refuseIfHeldForAnotherBody,
  type HeldKey,
  type IdempotencyDeps,
  type IdempotencyScope,
} from '../features/idempotency/idempotency.service.js';
import { requireApiKey } from './api-auth.plugin.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Turns the Idempotency-Key rules on for a creating route. */
    idempotency?: boolean;
  }
  interface FastifyRequest {
    /** The Idempotency-Key this request holds, for its service to complete; null without one. */
    idempotencyKey: HeldKey | null;
  }
}

/** The key's scope, or undefined without a key; throws the 400 of an invalid key. */
function scopeOf(request: FastifyRequest, route: string): IdempotencyScope | undefined {
  const header = readIdempotencyKey(request.headers['idempotency-key']);
  if (header.kind === 'invalid') throw new ApiError('invalid_idempotency_key');
  if (header.kind === 'absent') return undefined;
  return { apiKeyId: requireApiKey(request).id, route, key: header.key };
}

function claimKey(deps: IdempotencyDeps, route: string): preHandlerHookHandler {
  return async function claimIdempotencyKey(request: FastifyRequest, reply: FastifyReply) {
    const scope = scopeOf(request, route);
    if (request.validationError) {
      if (scope && request.body !== undefined) await refuseIfHeldForAnotherBody(deps, scope, request.body);
      throw request.validationError;
    }
    if (!scope) return;
    // Claimed before the service's own rules run, so that a reused key with a different body is 409 even
    // when that body breaks one of them (the key is freed again when they refuse it).
    const claimed = await claimFor(deps, scope, request.body);
    if (claimed.kind === 'owned') {
      request.idempotencyKey = claimed.key;
      return;
    }
    return reply
      .header('idempotent-replayed', 'true')
      .code(claimed.response.status)
      .headers(claimed.response.headers)
      .send(claimed.response.body);
  };
}

/** Only successes are stored (spec 4.1 rule 3.4): any other answer frees the key, before it is sent. */
const endKeyHold: onSendHookHandler = async function endKeyHold(request, reply, payload) {
  const key = request.idempotencyKey;
  if (key === null) return payload;
  request.idempotencyKey = null;
  const succeeded = reply.statusCode >= 200 && reply.statusCode < 300;
  try {
    await endHold(key, succeeded);
  } catch (error) {
    // The answer stands; the key frees itself when its lock ends.
    request.log.error({ err: error }, 'could not free an Idempotency-Key');
  }
  return payload;
};

export default fp<IdempotencyDeps>(
  async (app, deps) => {
    app.decorateRequest('idempotencyKey', null);
    app.addHook('onRoute', (route) => {
      if (!route.config?.idempotency) return;
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      // The key's scope within an API key: the method and the path as the client sends them.
      const scope = `${methods.join(',')} ${route.url}`;
      route.attachValidation = true;
      route.preHandler = [claimKey(deps, scope), ...toArray(route.preHandler)];
      route.onSend = [endKeyHold, ...toArray(route.onSend)];
    });
  },
  { name: 'callgate-idempotency', fastify: '5.x' },
);

function toArray<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}
