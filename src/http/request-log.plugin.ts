/**
 * The request log's plugin: every authenticated API request, once answered, is added to the log (its
 * rows are buffered and written in batches by RequestLogWriter). Requests without a valid key are not
 * logged: no account to show them to.
 */
import type { FastifyInstance, onResponseHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import { isoTimestamp } from '../lib/clock.js';
import { loggedBody } from '../features/request-log/request-log-bodies.js';
import type { RequestLogWriter } from '../features/request-log/request-log.service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The response body as sent, when it was text (every JSON answer), for the request log. */
    responseBodyText: string | null;
  }
}

/**
 * Adds an answered request to the log; also run by hand for the answers the scope's hooks never see (the
 * router's own errors). A callback hook, not an async one: every request runs it, and an async hook costs a
 * promise and a turn.
 */
export function requestLogHook(writer: RequestLogWriter): onResponseHookHandler {
  return (request, reply, done) => {
    const key = request.apiKey;
    if (!key) return done();
    const idempotencyKey = request.headers['idempotency-key'];
    writer.add(
      {
        id: request.id,
        account_id: key.account_id,
        api_key_id: key.id,
        key_prefix: key.prefix,
        method: request.method,
        path: request.url.slice(0, 500),
        status: reply.statusCode,
        error_code: reply.errorCode,
        idempotency_key: typeof idempotencyKey === 'string' ? idempotencyKey.slice(0, 255) : null,
        duration_ms: Math.round(reply.elapsedTime),
        replayed: reply.getHeader('idempotent-replayed') === 'true' ? 1 : 0,
        created_at: isoTimestamp(new Date(Date.now() - reply.elapsedTime)),
        request_body: loggedBody(request.jsonBodyText),
        response_body: loggedBody(request.responseBodyText),
      },
      key.mode,
    );
    done();
  };
}

/** What the log keeps of an answer its route keeps out of it. */
export const notKeptBody = '[not kept: personal data, kept only for CALLGATE_TRANSCRIPT_RETENTION]';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false for a route whose successful answers are not kept in the request log (a transcript). */
    logResponseBody?: boolean;
  }
}

export interface RequestLogOptions {
  readonly writer: RequestLogWriter;
}

/**
 * For the scope it is registered in (the API under /v1): keeps a reference to each answer's serialized body
 * and logs the request once answered. Nothing else happens before the reply: cutting and redacting wait for
 * onResponse.
 */
async function requestLog(scope: FastifyInstance, { writer }: RequestLogOptions): Promise<void> {
  scope.decorateRequest('responseBodyText', null);
  scope.addHook('onSend', (request, reply, payload, done) => {
    // A route whose answer is personal data kept for its own retention (a transcript) logs its errors only.
    const kept = request.routeOptions.config.logResponseBody !== false || reply.statusCode >= 400;
    request.responseBodyText = typeof payload === 'string' ? (kept ? payload : notKeptBody) : null;
    done(null, payload);
  });
  scope.addHook('onResponse', requestLogHook(writer));
}

export default fp(requestLog, { name: 'request-log' });
