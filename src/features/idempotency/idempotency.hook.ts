/**
 * Idempotency as a capability of any creating POST route: its handler, wrapped in `withIdempotency`, gets
 * a `KeyHold` when the request carries an Idempotency-Key, and hands it to its service, which stores the
 * resource with `hold.insertCompleting` (the key is completed in the same atomic step). Everything else is
 * done here, the same way for every route: the key's scope (API key, method + route, key), the 400 for an
 * invalid key, replays with `Idempotent-Replayed: true`, the 409s, and the key's release on any ending that
 * is not a success. This is the HTTP edge of idempotency.service.ts: it turns its values into answers.
 *
 * The route must set `attachValidation: true`: a body that breaks the schema still meets the key's rules
 * first (spec 4.1 rule 3.3: a known key with a different body is 409, whatever else is wrong with it).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors/api-error.js';
import { requireApiKey } from '../api-keys/api-auth.hook.js';
import {
  claimFor,
  heldForAnotherBody,
  readIdempotencyKey,
  readWithoutClaim,
  type IdempotencyDeps,
  type KeyHold,
  type ReadWithClaim,
} from './idempotency.service.js';

export type { KeyHold, ReadWithClaim };

// Routes seen to set attachValidation (request.routeOptions builds a new object at each read).
const checkedRoutes = new Set<string>();

/**
 * Runs a creating route's handler under the Idempotency-Key rules; a route's handler is one line:
 * `async (request, reply) => withIdempotency(deps, 'POST /v1/things', request, reply, async (hold) => …)`.
 * `route` is the key's scope within an API key: the method and the path as the client sends them. `run`
 * gets `hold` undefined when the request has no key; it is not called for a replay or a 409. `read` is a
 * read the handler needs (e.g. the row the body names): run with the key's claim, in its statement on
 * PostgreSQL, so it costs no round trip of its own; `run` gets its rows.
 */
export async function withIdempotency<Rep extends FastifyReply, Result, P extends object = never, Row = never>(
  deps: IdempotencyDeps,
  route: string,
  request: FastifyRequest,
  reply: Rep,
  run: (hold: KeyHold | undefined, readRows: readonly Row[]) => Promise<Result>,
  read?: ReadWithClaim<P, Row>,
): Promise<Result | Rep> {
  if (!checkedRoutes.has(route)) {
    // Without it, a body that breaks the schema would be answered 400 before the key's rules are met.
    if (!request.routeOptions.attachValidation) throw new Error(`withIdempotency(${route}): the route must set attachValidation: true`);
    checkedRoutes.add(route);
  }
  const apiKey = requireApiKey(request);
  const header = readIdempotencyKey(request.headers['idempotency-key']);
  if (header.kind === 'invalid') throw new ApiError('invalid_idempotency_key');
  const scope = header.kind === 'key' ? { apiKeyId: apiKey.id, route, key: header.key } : undefined;

  if (request.validationError) {
    if (scope && request.body !== undefined && (await heldForAnotherBody(deps.db, deps.clock, scope, request.body))) {
      throw new ApiError('idempotency_conflict');
    }
    throw request.validationError;
  }
  if (!scope) return run(undefined, await readWithoutClaim(deps.db, read));

  // Claimed before the service's own rules run, so that a reused key with a different body is 409 even
  // when that body breaks one of them (the key is released again when they refuse it).
  const { claimed, rows } = await claimFor(deps, scope, request.body, read);
  switch (claimed.kind) {
    case 'replay':
      reply
        .header('idempotent-replayed', 'true')
        .code(claimed.response.status)
        .headers(claimed.response.headers)
        .send(claimed.response.body);
      return reply;
    case 'conflict':
      throw new ApiError('idempotency_conflict');
    case 'in_progress':
      throw new ApiError(
        'idempotency_conflict',
        'A request with this Idempotency-Key is still in progress. Retry later with the same key to get its result.',
        { retryAfterSeconds: 1 },
      );
    case 'owned':
      try {
        return await run(claimed.hold, rows);
      } finally {
        // Only successes are stored (spec 4.1 rule 3.4): any other ending frees the key.
        await claimed.hold.end();
      }
  }
}
