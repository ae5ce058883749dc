/**
 * Counts every answered request by its route pattern (`/v1/calls/:id`, never the URL asked for: ids would
 * make a series each), its method and status, with its latency; and every 429 by its error code as the one
 * error renderer set it (`reply.errorCode`), so that a new refusal code is counted the day it is added.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from './metrics.js';

/** A path no route matched (a 404, a scanner's guesses) shares this one label. */
export const unmatchedRoute = 'unmatched';

/** Node's parser accepts a fixed list of methods; anything else would still be one label, not many. */
const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function routeLabel(request: FastifyRequest): string {
  return request.routeOptions.url ?? unmatchedRoute;
}

export function registerHttpMetrics(app: FastifyInstance, metrics: Metrics): void {
  // A callback hook, not an async one: every request runs it, and an async hook costs a promise and a turn.
  app.addHook('onResponse', (request, reply, done) => {
    const labels = {
      route: routeLabel(request),
      method: knownMethods.has(request.method) ? request.method : 'OTHER',
      status: String(reply.statusCode),
    };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    // A code from the catalogue; a 429 not rendered by it (a portal page) is still counted.
    if (reply.statusCode === 429) metrics.httpRefusals.inc({ code: reply.errorCode ?? 'unknown' });
    done();
  });
}
