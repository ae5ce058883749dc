/**
 * The options Fastify is built with: the body limit, the timeouts that cut slow clients off, our request
 * ids, validation that takes a body exactly as sent, and JSON answers where Node or Fastify would answer
 * by themselves.
 */
import type { Server } from 'node:http';
import { LogController, type FastifyBaseLogger, type FastifyHttpOptions } from 'fastify';
import type { Config } from '../config.js';
import { newId, pathIdMaxLength } from '../lib/ids.js';
import { answerClientError } from './client-errors.js';
import { lazyRequestLogger } from './request-logger.js';

/** Spec: bodies over 64 KB are refused with 413 `payload_too_large`. */
export const bodyLimitBytes = 64 * 1024;

/** How often Node looks for connections past their headers or request timeout (its default is 30 s). */
const connectionsCheckingIntervalMs = 1_000;

type ServerConfig = Pick<Config, 'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'trustProxy'>;

export function serverOptions(config: ServerConfig, logger: FastifyBaseLogger): FastifyHttpOptions<Server, FastifyBaseLogger> {
  return {
    loggerInstance: logger,
    bodyLimit: bodyLimitBytes,
    // Slow clients (headers or a body trickled a byte at a time) are cut off at these limits with a 408, so a
    // few hundred of them cannot hold a process's connections; the time to answer does not count.
    http: {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(connectionsCheckingIntervalMs, config.headersTimeoutMs),
      // A missing Host is answered in our JSON shape (request-edge.plugin.ts), not by Node with an empty 400.
      requireHostHeader: false,
    },
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    trustProxy: config.trustProxy,
    // Request ids are ours: a client-sent X-Request-Id is not trusted.
    requestIdHeader: false,
    genReqId: () => newId('request'),
    // Fastify's default, named: a longer id is not found (404), as the route schemas document (ids.ts).
    routerOptions: { maxParamLength: pathIdMaxLength },
    // One access-log line per request (access-log.plugin.ts) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // `request.log` is made when a request first logs (request-logger.ts).
    childLoggerFactory: lazyRequestLogger,
    ajv: {
      // Validate exactly what was sent: no type coercion, no silent removal of unknown fields.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: true, allErrors: false, allowUnionTypes: true },
    },
    // Fastify's own answer to a request that arrives while the server closes is not in the catalogue's
    // shape; the request edge's onRequest hook answers it instead.
    return503OnClosing: false,
    // A request Node's HTTP parser refuses (bad header bytes, broken framing) still gets a JSON answer.
    clientErrorHandler: answerClientError,
  };
}
