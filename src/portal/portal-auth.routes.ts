/** Sign-in and sign-out. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { signInCsrfCookie, signInCsrfToken } from './portal-csrf.js';
import { seeOther, sendPage, sessionCookie, sessionOf, type PortalDeps } from './portal-request.js';
import { EmptyForm, SignInForm, SignInQuery } from './portal.schemas.js';
import { ApiError } from '../errors/api-error.js';
import { endSession, sessionMaxMs, signIn, type SignedIn } from '../features/identity/sessions.service.js';
import { signInPage } from './views/auth.view.js';
import { errorPage } from './views/errors.view.js';
import { noticeFor } from './views/layout.view.js';

/** Where to go after signing in: a portal path only, so the form can't be made to send anyone elsewhere. */
function safeNext(next: string | undefined): string | undefined {
  return next !== undefined && /^\/developers(?:[/?][^\s\\]*)?$/.test(next) && !next.startsWith('//') ? next : undefined;
}

/** Secure cookies when the portal is served over https, directly or by the public URL's promise. */
function cookieIsSecure(request: FastifyRequest, publicUrl: string): boolean {
  return request.protocol === 'https' || publicUrl.startsWith('https:');
}

/** The sign-in token's cookie: for the sign-in path only, gone when the browser closes. */
const signInCookieOptions = { path: '/developers/sign-in', httpOnly: true, sameSite: 'lax' } as const;

/** A refused sign-in: the form again with the reason (401), or the page that says when to come back (429). */
function refusedSignIn(
  request: FastifyRequest,
  reply: FastifyReply,
  refusal: ApiError,
  form: { email: string; next?: string | undefined },
) {
  if (refusal.code === 'unauthorized') {
    // The form again, with the token its cookie still holds (the origin check saw it there).
    return sendPage(reply, 401, signInPage({ csrfToken: signInCsrfToken(request), ...form, error: refusal.message }));
  }
  if (refusal.retryAfterSeconds !== undefined) reply.header('retry-after', String(refusal.retryAfterSeconds));
  return sendPage(
    reply,
    429,
    errorPage({ status: 429, title: 'Too many sign-in attempts', message: refusal.message, requestId: request.id }),
  );
}

const isSignInRefusal = (error: unknown): error is ApiError =>
  error instanceof ApiError && (error.code === 'unauthorized' || error.code === 'rate_limit_exceeded');

export const portalAuthRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  /** Sets the sign-in form's token in its cookie (again, so it lasts as long as the page) and returns it. */
  const signInToken = (request: FastifyRequest, reply: FastifyReply): string => {
    const token = signInCsrfToken(request);
    reply.setCookie(signInCsrfCookie, token, { ...signInCookieOptions, secure: cookieIsSecure(request, deps.config.publicUrl) });
    return token;
  };

  app.get('/sign-in', { schema: { querystring: SignInQuery }, config: { portalPublic: true } }, async (request, reply) => {
    if (request.portal) return seeOther(reply, '/developers');
    const csrfToken = signInToken(request, reply);
    return sendPage(reply, 200, signInPage({ csrfToken, next: safeNext(request.query.next), notice: noticeFor(request.query.notice) }));
  });

  app.post('/sign-in', { schema: { body: SignInForm }, config: { portalPublic: true, portalSignIn: true } }, async (request, reply) => {
    const email = request.body.email.slice(0, 320);
    const password = request.body.password.slice(0, 1024);
    const next = safeNext(request.body.next || undefined);
    let result: SignedIn;
    try {
      result = await signIn({ db: deps.db, clock: deps.clock, limiters: deps.signInLimiters }, { email, password, ip: request.ip });
    } catch (error) {
      if (isSignInRefusal(error)) return refusedSignIn(request, reply, error, { email, next });
      throw error;
    }
    // A session the browser already had ends here: the new sign-in never reuses a token from before it.
    if (request.portal) await endSession(deps.db, request.portal);
    reply.setCookie(sessionCookie, result.token, {
      path: '/developers',
      httpOnly: true,
      sameSite: 'lax',
      secure: cookieIsSecure(request, deps.config.publicUrl),
      maxAge: Math.floor(sessionMaxMs / 1000),
    });
    return seeOther(reply, next ?? '/developers');
  });

  app.post('/sign-out', { schema: { body: EmptyForm } }, async (request, reply) => {
    await endSession(deps.db, sessionOf(request));
    reply.clearCookie(sessionCookie, {
      path: '/developers',
      httpOnly: true,
      sameSite: 'lax',
      secure: cookieIsSecure(request, deps.config.publicUrl),
    });
    return seeOther(reply, '/developers/sign-in?notice=signed_out');
  });
};
