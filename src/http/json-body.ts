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
      done(error, value);
    });
  });
}
