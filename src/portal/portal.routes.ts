/**
 * The developer portal at /developers: server-rendered HTML pages for the people of an account (API keys,
 * webhooks, agents, calls, batches, request log). Its scope adds form and cookie parsing, sessions, CSRF checks and
 * HTML error pages; the /v1 API outside it stays JSON-only.
 */
import fs from 'node:fs';
import fastifyCookie, { fastifyCookie as cookies } from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';
import { statusOf } from '../errors/catalogue.js';
import { findNul } from '../http/nul-text.js';
import { portalAuthRoutes } from './portal-auth.routes.js';
import { portalBatchesRoutes } from './portal-batches.routes.js';
import { portalCallsRoutes } from './portal-calls.routes.js';
import { csrfTokenMatches, isSameOrigin, signInCsrfCookie } from './portal-csrf.js';
import { portalKeysRoutes } from './portal-keys.routes.js';
import { portalPagesRoutes } from './portal-pages.routes.js';
import {
  csrfFieldOf,
  matchFieldShapes,
  sendBadRequest,
  sendErrorPage,
  sendNotFound,
  sessionCookie,
  type PortalDeps,
} from './portal-request.js';
import { resolveSession } from '../features/identity/sessions.service.js';
import { portalSuppressionsRoutes } from './portal-suppressions.routes.js';
import { portalWebhooksRoutes } from './portal-webhooks.routes.js';

/** Pages may load only our own stylesheet, script and audio (a call's recording), submit only to us, and never be framed. */
const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; media-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

/** The stylesheet and script beside this module: in src/ as written, in dist/ as the build copies them. */
const assetsDir = new URL('./assets/', import.meta.url);
const assets = {
  'portal.css': 'text/css; charset=utf-8',
  'portal.js': 'text/javascript; charset=utf-8',
} as const;

/** The largest form a portal page takes, unless its route says otherwise (an import of numbers). */
const formBodyLimitBytes = 64 * 1024;

const unreadableFormMessage = 'The form could not be read. Go back and try again.';
const serverFaultMessage = 'This is a fault on our side. Quote the request id below if you contact support.';

/** Where a request without a session goes: the sign-in page, and back to the page it asked for (GET only). */
function signInRedirect(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
  return reply.redirect(`/developers/sign-in${next}`, 303);
}

/** A URL the portal answers (with HTML pages), as opposed to the JSON API beside it. */
export function isPortalUrl(url: string): boolean {
  return url === '/developers' || url.startsWith('/developers/') || url.startsWith('/developers?');
}

/**
 * Fastify's router turns some URLs away before any hook or not-found handler runs: a path parameter longer
 * than its maxParamLength (100) and a malformed percent-encoding. The app passes those of the portal here,
 * so they get the answers of any other unknown portal page (the sign-in redirect without a session, else
 * the HTML error page with the navigation) instead of the API's JSON.
 */
export async function sendPortalFrameworkError(
  deps: PortalDeps,
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  reply.headers(securityHeaders);
  reply.header('x-request-id', request.id);
  try {
    request.portal = await resolveSession(deps.db, deps.clock, cookies.parse(request.headers.cookie ?? '')[sessionCookie]);
  } catch (cause) {
    request.log.error({ err: cause }, 'portal session lookup failed');
    await sendErrorPage(request, reply, 500, 'Something went wrong', serverFaultMessage);
    return;
  }
  if (!request.portal) {
    await signInRedirect(request, reply);
    return;
  }
  if (error.code === 'FST_ERR_BAD_URL') {
    await sendBadRequest(request, reply, 'This address is malformed. Check the link and try again.');
    return;
  }
  await sendNotFound(request, reply);
}

export const portalRoutes: FastifyPluginAsync<{ deps: PortalDeps }> = async (app, { deps }) => {
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody, { bodyLimit: formBodyLimitBytes });
  // The portal's forms are urlencoded and nothing else: the API's JSON parser, inherited from the app, has
  // no business here. Any other body is refused by Fastify with 415 before a route runs (the page below).
  app.removeContentTypeParser('application/json');
  app.decorateRequest('portal', null);
  // A form or query that breaks its route's schema is answered by the hooks below, in the portal's pages,
  // and only after the origin and NUL checks, so a forged form is still refused as such first.
  app.addHook('onRoute', (route) => {
    route.attachValidation = true;
  });
  app.addHook('preValidation', matchFieldShapes);

  // A form sent compressed would be read as its compressed bytes: refused as unsupported, before parsing.
  app.addHook('preParsing', async (request) => {
    const encoding = request.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') throw Object.assign(new Error('compressed form body'), { statusCode: 415 });
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.headers(securityHeaders);
    request.portal = await resolveSession(deps.db, deps.clock, request.cookies[sessionCookie]);
    if (request.portal || request.routeOptions.config.portalPublic) return;
    return signInRedirect(request, reply);
  });

  // After the body is parsed: every POST must prove it comes from a page of ours.
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const { config } = request.routeOptions;
    const genuine = config.portalSignIn
      ? isSameOrigin(request, deps.config.publicUrl) && csrfTokenMatches(csrfFieldOf(request), request.cookies[signInCsrfCookie] ?? '')
      : request.portal !== null && csrfTokenMatches(csrfFieldOf(request), request.portal.csrfToken);
    if (genuine) return;
    return sendErrorPage(
      request,
      reply,
      403,
      'This form has expired',
      'The form was not sent from a current page of this portal. Go back, reload the page and try again.',
    );
  });

  // After the origin check: a U+0000 in any form field or query parameter is refused here, for every page, on
  // both databases (PostgreSQL cannot store it; see src/http/nul-text.ts), naming the field.
  app.addHook('preHandler', async (request, reply) => {
    const place = findNul(request.body ?? {}) ?? findNul(request.query ?? {});
    if (!place) return;
    // Form fields are flat: the first part of the path is the field's name ('' when a name holds the NUL).
    const name = place.inKey ? '' : place.field.split('.')[0]!.slice(0, 64);
    const field = name === '' ? 'A field name' : `The field ${name}`;
    return sendBadRequest(
      request,
      reply,
      `${field} contains a NUL character (U+0000), which is not accepted. Go back, remove it and try again.`,
    );
  });

  // Last of the checks: what its schema refused. An id that is not plain names nothing (the 404 of any
  // unknown id); anything else is a form the page did not send.
  app.addHook('preHandler', async (request, reply) => {
    const failure = request.validationError;
    if (!failure) return;
    if (failure.validationContext === 'params') return sendNotFound(request, reply);
    return sendBadRequest(request, reply, unreadableFormMessage);
  });

  app.setErrorHandler((error, request, reply) => {
    // A service's not_found (an id of another account, or none) is the portal's 404 page, as for any unknown id.
    if (error instanceof ApiError && error.code === 'not_found') return sendNotFound(request, reply);
    // Fastify's errors carry statusCode; the ApiError of a parser the app shares carries a catalogue code.
    const given = error instanceof ApiError ? statusOf(error.code) : (error as { statusCode?: unknown }).statusCode;
    const status = typeof given === 'number' ? given : 500;
    const clientError = status >= 400 && status < 500;
    if (!clientError) request.log.error({ err: error }, 'portal request failed');
    if (!clientError) return sendErrorPage(request, reply, 500, 'Something went wrong', serverFaultMessage);
    if (status === 415) {
      const message =
        'This page takes only forms sent by the portal (application/x-www-form-urlencoded, uncompressed). Go back and submit the form again.';
      return sendErrorPage(request, reply, 415, 'Unsupported form', message);
    }
    if (status === 413) {
      // The route's own limit: the batch and suppression imports take larger forms than the others.
      const limitKb = Math.round((request.routeOptions.bodyLimit ?? formBodyLimitBytes) / 1024);
      return sendErrorPage(
        request,
        reply,
        413,
        'Form too large',
        `The form is larger than ${limitKb} KB. Go back, shorten it and try again.`,
      );
    }
    return sendErrorPage(request, reply, status, 'Bad request', unreadableFormMessage);
  });
  app.setNotFoundHandler((request, reply) => sendNotFound(request, reply));

  for (const [name, type] of Object.entries(assets)) {
    const body = fs.readFileSync(new URL(name, assetsDir));
    app.get(`/assets/${name}`, { config: { portalPublic: true } }, async (_request, reply) =>
      reply.header('cache-control', 'public, max-age=3600').type(type).send(body),
    );
  }

  await app.register(portalAuthRoutes, { deps });
  await app.register(portalPagesRoutes, { deps });
  await app.register(portalKeysRoutes, { deps });
  await app.register(portalWebhooksRoutes, { deps });
  await app.register(portalCallsRoutes, { deps });
  await app.register(portalBatchesRoutes, { deps });
  await app.register(portalSuppressionsRoutes, { deps });
};
