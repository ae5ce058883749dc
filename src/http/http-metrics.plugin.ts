/**
 * Counts every answered request by its route pattern (`/v1/calls/:id`, never the URL asked for: ids would
 * make a series each), its method and status, with its latency; and every 429 by its error code as the one
 * error renderer set it (`reply.errorCode`), so that a new refusal code is counted the day it is added.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import type { Metrics } from '../features/metrics/metrics.js';

/** A path no route matched (a 404, a scanner's guesses) shares this one label. */
export const unmatchedRoute = 'unmatched';

/** Node's parser accepts a fixed list of methods; anything else would still be one label, not many. */
const knownMethods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export interface HttpMetricsOptions {
  readonly metrics: Metrics;
}

async function httpMetrics(app: FastifyInstance, { metrics }: HttpMetricsOptions): Promise<void> {
  const record = (route: string, request: FastifyRequest, reply: FastifyReply): void => {
    const labels = { route, method: knownMethods.has(request.method) ? request.method : 'OTHER', status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    // A code from the catalogue; a 429 not rendered by it (a portal page) is still counted.
    if (reply.statusCode === 429) metrics.httpRefusals.inc({ code: reply.errorCode ?? 'unknown' });
  };

  // Each route counts its answers with a hook of its own that knows its pattern: reading
  // `request.routeOptions.url` instead builds a 12-field object on every request. Routes added later (every
  // route: the features register theirs after this) get one too; the HEAD route Fastify adds beside a GET
  // starts from the GET's options as written, so it gets its own, not a second. Callback hooks, not async
  // ones: every request runs them, and an async hook costs a promise and a turn.
  app.addHook('onRoute', (route) => {
    const pattern = route.url;
    const counted: onResponseHookHandler = (request, reply, done) => {
      record(pattern, request, reply);
      done();
    };
    const own = route.onResponse;
    route.onResponse = own === undefined ? [counted] : [...(Array.isArray(own) ? own : [own]), counted];
  });
  // A request no route matched (and one the router refused) runs the application's hooks only.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) record(unmatchedRoute, request, reply);
    done();
  });
}

export default fp(httpMetrics, { name: 'http-metrics' });
