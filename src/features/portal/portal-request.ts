/** What every portal route file shares: its dependencies, the session of a request, forms, page replies. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { Clock } from '../../lib/clock.js';
import type { PortalSession, SignInLimiters } from '../identity/sessions.service.js';
import { errorPage } from './views/errors.view.js';
import type { PageFrame } from './views/layout.view.js';
import type { AgentDirectory } from '../providers/provider.interface.js';

/** The parts of the services the portal uses (the app passes its `Services`). */
export interface PortalDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Pick<Config, 'publicUrl' | 'webhookAllowPrivate' | 'elevenlabs'>;
  /** Woken after a test event or a resend, so the worker delivers at once instead of at its next sweep. */
  readonly notifier: { notify(): void };
  readonly signInLimiters: SignInLimiters;
  /** The provider's workspace when the server has its key: the Agents page can then sync. */
  readonly agentDirectory: AgentDirectory | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The signed-in portal user's session, on portal routes. */
    portal: PortalSession | null;
  }
  interface FastifyContextConfig {
    /** A portal route open without a session (sign-in, assets). */
    portalPublic?: boolean;
    /** The sign-in form: no session yet, so its POST is checked by Origin instead of the session's token. */
    portalSignIn?: boolean;
  }
}

export const sessionCookie = 'cg_session';

/** The session of a route that requires one (the portal's onRequest hook has already redirected without). */
export function sessionOf(request: FastifyRequest): PortalSession {
  if (!request.portal) throw new Error('portal route reached without a session');
  return request.portal;
}

export function frameUser(session: PortalSession): NonNullable<PageFrame['user']> {
  return { email: session.email, accountId: session.accountId, accountName: session.accountName, csrfToken: session.csrfToken };
}

type FormBody = Record<string, string | string[] | undefined>;

function formBody(request: FastifyRequest): FormBody {
  const body = request.body;
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as FormBody) : {};
}

/** One field of a form (the first, when sent twice); '' when absent. */
export function formValue(request: FastifyRequest, name: string): string {
  const value = formBody(request)[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : '';
}

/** Every value of a repeated field (checkboxes). */
export function formValues(request: FastifyRequest, name: string): string[] {
  const value = formBody(request)[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string');
}

/** One query-string parameter as text, or undefined. */
export function queryValue(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' && first !== '' ? first : undefined;
}

/** Ids in our URLs are short and plain; anything else (a NUL byte, a slash) cannot name a resource. */
export function isPlainId(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,200}$/.test(id);
}

export function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}

/** The 404 page: for unknown ids and for another account's ids alike. */
export function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(
    reply,
    404,
    errorPage({
      status: 404,
      title: 'Not found',
      message: 'There is no such page in this account.',
      requestId: request.id,
      ...(request.portal ? { user: frameUser(request.portal) } : {}),
    }),
  );
}

/** A redirect after a POST (303, so the browser follows with GET). */
export function seeOther(reply: FastifyReply, url: string): FastifyReply {
  return reply.redirect(url, 303);
}
