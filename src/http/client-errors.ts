/**
 * The answer to a request that Node's HTTP server refused before Fastify saw it (bad header bytes, broken
 * framing, headers too large, a request too slow to arrive, an Expect we do not meet, CONNECT): still JSON
 * with a stable code and a request id, as every other error.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { errorCatalogue, isRetryable, type ErrorCode } from '../errors/catalogue.js';
import { newId } from '../lib/ids.js';

// Fastify types rawPacket as a JSON-ed Buffer; at run time Node hands over the Buffer itself.
type ParserError = Error & { code?: string; rawPacket?: unknown };

/**
 * An Idempotency-Key with a control byte (0x7F, say) never reaches our validation: the parser refuses the
 * whole request. The spec makes any key outside `!`..`~` a 400 invalid_idempotency_key, so the refused
 * bytes are read for that header.
 */
function hasBadIdempotencyKey(rawPacket: unknown): boolean {
  if (!Buffer.isBuffer(rawPacket)) return false;
  const head = rawPacket.toString('latin1');
  const end = head.indexOf('\r\n\r\n');
  const lines = (end === -1 ? head : head.slice(0, end)).split('\r\n');
  return lines.some((line) => /^idempotency-key[ \t]*:/i.test(line) && /[\x00-\x08\x0a-\x1f\x7f]/.test(line.slice(line.indexOf(':') + 1)));
}

/** A client that got its answer has this long to read it and close before the socket is destroyed. */
const closeGraceMs = 1_000;

function classify(error: ParserError): { code: ErrorCode; statusLine: string; message: string } {
  // Node's headers or request timeout (CALLGATE_HEADERS_TIMEOUT_MS, CALLGATE_REQUEST_TIMEOUT_MS).
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return { code: 'request_timeout', statusLine: '408 Request Timeout', message: errorCatalogue.request_timeout.message };
  }
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return {
      code: 'headers_too_large',
      statusLine: '431 Request Header Fields Too Large',
      message: errorCatalogue.headers_too_large.message,
    };
  }
  if (hasBadIdempotencyKey(error.rawPacket)) {
    return { code: 'invalid_idempotency_key', statusLine: '400 Bad Request', message: errorCatalogue.invalid_idempotency_key.message };
  }
  return { code: 'invalid_request', statusLine: '400 Bad Request', message: 'The HTTP request is malformed.' };
}

/**
 * Writes a whole JSON error response on the socket and closes it: at once from our side, and fully once
 * the client has had `closeGraceMs` to read it (the HTTP server keeps half-open sockets, so a slow client
 * that never closes would otherwise keep the connection).
 */
function endWithJsonError(socket: Duplex, statusLine: string, code: ErrorCode, message: string): void {
  const requestId = newId('request');
  const body = JSON.stringify({ error: code, message, request_id: requestId, retryable: isRetryable(code) });
  socket.end(
    `HTTP/1.1 ${statusLine}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), closeGraceMs).unref();
}

/** Fastify's `clientErrorHandler`. */
export function answerClientError(error: ParserError, socket: Duplex): void {
  // A response already under way (a timeout while it is sent) cannot get a second one: only close.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { code, statusLine, message } = classify(error);
  endWithJsonError(socket, statusLine, code, message);
}

/**
 * The server's 'connect' event. callgate is no proxy; without a listener Node would close the socket
 * without a word.
 */
export function answerConnect(_request: IncomingMessage, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  endWithJsonError(
    socket,
    '405 Method Not Allowed',
    'method_not_allowed',
    'callgate is not a proxy: CONNECT is not allowed. Send API requests with GET or POST.',
  );
}

/** The server's 'checkExpectation' event: an `Expect` other than `100-continue`, which HTTP says to refuse. */
export function answerExpectation(request: IncomingMessage, response: ServerResponse): void {
  const requestId = newId('request');
  const body = JSON.stringify({
    error: 'expectation_failed',
    message: errorCatalogue.expectation_failed.message,
    request_id: requestId,
    retryable: false,
  });
  response.writeHead(errorCatalogue.expectation_failed.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
    // The body the client holds back is never read.
    connection: 'close',
  });
  response.end(body);
  request.resume();
}

/** Events Node answers by itself, with an empty body or none, unless someone listens. */
export function answerNodeEvents(server: Server): void {
  server.on('checkExpectation', answerExpectation);
  server.on('connect', answerConnect);
}
