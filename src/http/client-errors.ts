/**
 * The answer to a request that Node's HTTP parser refused before Fastify saw it (bad header bytes, broken
 * framing, headers too large): still JSON with a stable code and a request id, as every other error.
 */
import type { Socket } from 'node:net';
import { errorCatalogue, type ErrorCode } from '../errors/catalogue.js';
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

function classify(error: ParserError): { code: ErrorCode; statusLine: string; message: string } {
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    return { code: 'headers_too_large', statusLine: '431 Request Header Fields Too Large', message: errorCatalogue.headers_too_large.message };
  }
  if (hasBadIdempotencyKey(error.rawPacket)) {
    return { code: 'invalid_idempotency_key', statusLine: '400 Bad Request', message: errorCatalogue.invalid_idempotency_key.message };
  }
  return { code: 'invalid_request', statusLine: '400 Bad Request', message: 'The HTTP request is malformed.' };
}

/** Fastify's `clientErrorHandler`. */
export function answerClientError(error: ParserError, socket: Socket): void {
  if (!socket.writable) return;
  const requestId = newId('request');
  const { code, statusLine, message } = classify(error);
  const body = JSON.stringify({ error: code, message, request_id: requestId });
  socket.end(
    `HTTP/1.1 ${statusLine}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
  );
}
