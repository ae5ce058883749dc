/**
 * The API's one body parser: JSON, sent as UTF-8 and uncompressed (RFC 8259 requires UTF-8 between
 * systems). Fastify's own parser decodes any bytes as UTF-8, so invalid bytes became U+FFFD in stored
 * metadata, and it ignores charset and Content-Encoding; here each of those gets a clear 4xx instead.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '../errors/api-error.js';
import { encodingProblem, inexactNumber, jsonMaxDepth, nestsDeeperThan, parsesAsPlainJson } from './json-body.js';
import { findLoneSurrogate, findNul, loneSurrogateError, nulError } from './nul-text.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's body may be left out (a batch's cancel, whose `hang_up` is optional): an empty body reads as none. */
    optionalBody?: boolean;
  }
  interface FastifyRequest {
    /** The JSON body as sent (UTF-8 text), kept for the request log; null without a readable body. */
    jsonBodyText: string | null;
  }
}

async function jsonBody(app: FastifyInstance): Promise<void> {
  app.decorateRequest('jsonBodyText', null);
  // The API speaks JSON only; Fastify's built-in text/plain parser would let plain text through to validation.
  app.removeContentTypeParser('text/plain');
  // secure-json-parse underneath: keys named __proto__ or constructor.prototype are refused, not parsed.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const problem = encodingProblem(request);
    if (problem) return done(problem, undefined);
    const bytes = body as Buffer;
    // Many HTTP clients send `Content-Type: application/json` on every request, bodiless POSTs and DELETEs
    // included (pause, resume, cancel, a suppression's removal): a route that takes no body reads none.
    if (bytes.length === 0 && (request.routeOptions.schema?.body === undefined || request.routeOptions.config.optionalBody)) {
      return done(null, undefined);
    }
    if (!isUtf8(bytes)) return done(new ApiError('invalid_json', 'The request body is not valid UTF-8; send JSON as UTF-8.'), undefined);
    const text = bytes.toString('utf8');
    // A reference, not a copy: the request log cuts it after the answer (even a refused body has a story).
    request.jsonBodyText = text;
    if (nestsDeeperThan(text, jsonMaxDepth)) {
      return done(
        new ApiError(
          'invalid_request',
          `The request body is nested deeper than ${jsonMaxDepth} levels of arrays and objects; metadata is flat, send a flat object.`,
        ),
        undefined,
      );
    }
    parseJson(request, text, (error, value) => {
      if (error && parsesAsPlainJson(text)) {
        // Valid JSON that the parser refused: it has a __proto__ or constructor.prototype key, a
        // prototype-pollution vector for every consumer of the data.
        return done(
          new ApiError('invalid_request', 'Keys named __proto__, or constructor with a prototype key, are not accepted.'),
          undefined,
        );
      }
      if (error) return done(error, undefined);
      const inexact = inexactNumber(text);
      if (inexact) {
        const shown = inexact.token.length > 40 ? `${inexact.token.slice(0, 40)}…` : inexact.token;
        const where = inexact.path === '' ? '' : ` in ${inexact.path}`;
        return done(
          new ApiError(
            'invalid_request',
            `The number ${shown}${where} cannot be kept as written: stored as a double it would read back as ${inexact.readBack}. Send it as a string (integers beyond ±9007199254740991, or more than 15 significant digits).`,
            inexact.path === '' ? {} : { param: inexact.path },
          ),
          undefined,
        );
      }
      // A NUL can only be written as the escape \u0000 (JSON refuses the raw byte in a string).
      const nul = text.includes('\\u0000') ? findNul(value) : null;
      if (nul) return done(nulError(nul), undefined);
      // Likewise a surrogate can only come as an escape (UTF-8 has no bytes for one: isUtf8 refused those).
      const lone = /\\u[dD][89a-fA-F]/.test(text) ? findLoneSurrogate(value) : null;
      if (lone) return done(loneSurrogateError(lone), undefined);
      done(null, value);
    });
  });
}

export default fp(jsonBody, { name: 'json-body' });
