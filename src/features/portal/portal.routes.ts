/**
 * The developer portal at /developers: server-rendered HTML pages for the people of an account (API keys,
 * webhooks, agents, calls, request log). Its scope adds form and cookie parsing, sessions, CSRF checks and
 * HTML error pages; the /v1 API outside it stays JSON-only.
 */
import fs from 'node:fs';
import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import type { FastifyPluginAsync } from 'fastify';
import { portalAuthRoutes } from './portal-auth.routes.js';
import { portalCallsRoutes } from './portal-calls.routes.js';
import { csrfTokenMatches, isSameOrigin } from './portal-csrf.js';
import { portalKeysRoutes } from './portal-keys.routes.js';
import { portalPagesRoutes } from './portal-pages.routes.js';
import { formValue, frameUser, sendNotFound, sendPage, sessionCookie, type PortalDeps } from './portal-request.js';
import { resolveSession } from './portal-sessions.service.js';
import { portalWebhooksRoutes } from './portal-webhooks.routes.js';
import { errorPage } from './views/errors.view.js';

/** Pages may load only our own stylesheet and script, submit only to us, and never be framed. */
const securityHeaders = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};

/*
 * The stylesheet and script live beside the sources. This module is three folders below the repository
 * root both as src/features/portal/*.ts and as dist/features/portal/*.js, so one relative path finds them.
 */
const assetsDir = new URL('../../../src/features/portal/assets/', import.meta.url);
const assets = {
  'portal.css': 'text/css; charset=utf-8',
  'portal.js': 'text/javascript; charset=utf-8',
} as const;

export const portalRoutes: FastifyPluginAsync<{ deps: PortalDeps }> = async (app, { deps }) => {
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody, { bodyLimit: 64 * 1024 });
  app.decorateRequest('portal', null);

  app.addHook('onRequest', async (request, reply) => {
    reply.headers(securityHeaders);
    request.portal = await resolveSession(deps.db, deps.clock, request.cookies[sessionCookie]);
    if (request.portal || request.routeOptions.config.portalPublic) return;
    const next = request.method === 'GET' ? `?next=${encodeURIComponent(request.url)}` : '';
    return reply.redirect(`/developers/sign-in${next}`, 303);
  });

  // After the body is parsed: every POST must prove it comes from a page of ours.
  app.addHook('preHandler', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const { config } = request.routeOptions;
    const genuine = config.portalSignIn
      ? isSameOrigin(request, deps.config.publicUrl)
      : request.portal !== null && csrfTokenMatches(formValue(request, '_csrf'), request.portal.csrfToken);
    if (genuine) return;
    return sendPage(
      reply,
      403,
      errorPage({
        status: 403,
        title: 'This form has expired',
        message: 'The form was not sent from a current page of this portal. Go back, reload the page and try again.',
        requestId: request.id,
        ...(request.portal ? { user: frameUser(request.portal) } : {}),
      }),
    );
  });

  app.setErrorHandler((error, request, reply) => {
    const status = typeof (error as { statusCode?: unknown }).statusCode === 'number' ? (error as { statusCode: number }).statusCode : 500;
    const clientError = status >= 400 && status < 500;
    if (!clientError) request.log.error({ err: error }, 'portal request failed');
    const user = request.portal ? { user: frameUser(request.portal) } : {};
    const page = clientError
      ? errorPage({ status, title: 'Bad request', message: 'The form could not be read. Go back and try again.', requestId: request.id, ...user })
      : errorPage({ status: 500, title: 'Something went wrong', message: 'This is a fault on our side. Quote the request id below if you contact support.', requestId: request.id, ...user });
    return sendPage(reply, clientError ? status : 500, page);
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
};
