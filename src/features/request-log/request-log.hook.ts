/**
 * The request log's own hook: every authenticated API request, once answered, is added to the log (its
 * rows are buffered and written in batches by RequestLogWriter). Requests without a valid key are not
 * logged: no account to show them to.
 */
import type { onResponseAsyncHookHandler } from 'fastify';
import type { RequestLogWriter } from './request-log.service.js';

export function requestLogHook(writer: RequestLogWriter): onResponseAsyncHookHandler {
  return async (request, reply) => {
    const key = request.apiKey;
    if (!key) return;
    const idempotencyKey = request.headers['idempotency-key'];
    writer.add({
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
      created_at: new Date(Date.now() - reply.elapsedTime).toISOString(),
    });
  };
}
