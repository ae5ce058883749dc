/**
 * The API's one body parser: JSON, sent as UTF-8 and uncompressed (RFC 8259 requires UTF-8 between
 * systems). Fastify's own parser decodes any bytes as UTF-8, so invalid bytes became U+FFFD in stored
 * metadata, and it ignores charset and Content-Encoding; here each of those gets a clear 4xx instead.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';

/** The charset parameter of a Content-Type, lower-cased and unquoted, or undefined when there is none. */
export function contentTypeCharset(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  for (const parameter of contentType.split(';').slice(1)) {
    const [name, ...rest] = parameter.split('=');
    if (name?.trim().toLowerCase() !== 'charset') continue;
    return rest.join('=').trim().replace(/^"(.*)"$/, '$1').toLowerCase();
  }
  return undefined;
}

function encodingProblem(request: FastifyRequest): ApiError | null {
  const charset = contentTypeCharset(request.headers['content-type']);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return new ApiError('unsupported_media_type', `JSON bodies must be UTF-8; charset=${charset.slice(0, 40)} is not supported.`);
  }
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    return new ApiError('unsupported_media_type', `Content-Encoding ${encoding.slice(0, 40)} is not supported; send the body uncompressed.`);
  }
  return null;
}

function parsesAsPlainJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first number in `text` that JSON.parse cannot keep as written: out of a double's range (1e400 would
 * become Infinity, 1e-400 zero) or an integer beyond ±2^53 that no double holds and that would read back
 * different (12345678901234567890 would become 12345678901234567000). Such a number would reach the agent
 * changed, so it is refused instead.
 */
export function inexactNumber(text: string): string | null {
  // Most bodies have no long digit run and no exponent: skip the scan.
  if (!/\d{16}|\d[eE]/.test(text)) return null;
  const outsideStrings = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  for (const [token] of outsideStrings.matchAll(/-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g)) {
    const value = Number(token);
    if (!Number.isFinite(value)) return token;
    const [mantissa = ''] = token.split(/[eE]/);
    if (value === 0 && /[1-9]/.test(mantissa)) return token;
    // A large integer is kept when it reads back the same (43019823882677370 is a double's shortest form) or
    // is that double's exact value (2^60); 12345678901234567890 is neither.
    if (/^-?\d+$/.test(token) && !Number.isSafeInteger(value) && String(value) !== token && BigInt(token) !== BigInt(value)) return token;
  }
  return null;
}

export function registerJsonBodyParser(app: FastifyInstance): void {
  // secure-json-parse underneath: keys named __proto__ or constructor.prototype are refused, not parsed.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const problem = encodingProblem(request);
    if (problem) return done(problem, undefined);
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) return done(new ApiError('invalid_json', 'The request body is not valid UTF-8; send JSON as UTF-8.'), undefined);
    const text = bytes.toString('utf8');
    parseJson(request, text, (error, value) => {
      if (error && parsesAsPlainJson(text)) {
        // Valid JSON that the parser refused: it has a __proto__ or constructor.prototype key, a
        // prototype-pollution vector for every consumer of the data.
        return done(new ApiError('invalid_request', 'Keys named __proto__, or constructor with a prototype key, are not accepted.'), undefined);
      }
      if (error) return done(error, undefined);
      const inexact = inexactNumber(text);
      if (inexact) {
        const shown = inexact.length > 40 ? `${inexact.slice(0, 40)}…` : inexact;
        return done(
          new ApiError('invalid_request', `The number ${shown} cannot be kept exactly (integers go up to ±9007199254740991, and numbers must be within a double's range); send it as a string.`),
          undefined,
        );
      }
      done(null, value);
    });
  });
}
