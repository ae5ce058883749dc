/** What every portal route file shares: its dependencies, the session of a request, forms, page replies. */
import { ApiError } from '../errors/api-error.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/database.js';
import type { BatchesDeps } from '../features/batches/batches.service.js';
import type { Clock } from '../lib/clock.js';
import type { PortalSession, SignInLimiters } from '../features/identity/sessions.service.js';
import { errorPage } from './views/errors.view.js';
import type { PageFrame } from './views/layout.view.js';
import type { AgentDirectory } from '../features/providers/provider.interface.js';
import type { RealProvider } from '../features/providers/provider-catalogue.js';
import type { ProviderRegistry } from '../features/providers/provider-registry.js';
import { PlainIdPattern } from './portal.schemas.js';

/** The parts of the services the portal uses (the app passes its `Services`). */
export interface PortalDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Pick<Config, 'publicUrl' | 'webhookAllowPrivate' | 'providers'>;
  /** Woken after a test event or a resend, so the worker delivers at once instead of at its next sweep. */
  readonly notifier: { notify(): void };
  readonly signInLimiters: SignInLimiters;
  /** The workspace of each provider whose key the server has: the Agents page can sync with those. */
  readonly agentDirectories: ReadonlyMap<RealProvider, AgentDirectory>;
  /** Batches are created, paused, resumed and cancelled through the service the API uses. */
  readonly batches: BatchesDeps;
  /** The providers a call's recording is streamed from (the call page's player) and a cancel asks; the monitor's wake-up. */
  readonly calls: { readonly providers: ProviderRegistry; readonly onCallPlaced?: (callId: string, checkAt: Date) => void };
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

/**
 * A form or query string names a field once or several times, and its parser gives a string or a list
 * accordingly. Before the route's schema checks them, fields take the shape their schema declares: the
 * first value of a field sent twice (as the portal always read it), a list of one for a lone checkbox.
 */
export async function matchFieldShapes(request: FastifyRequest): Promise<void> {
  const schema = request.routeOptions.schema;
  if (!schema) return;
  reshape(request.body, schema.body);
  reshape(request.query, schema.querystring);
}

function reshape(values: unknown, schema: unknown): void {
  if (values === null || typeof values !== 'object' || Array.isArray(values)) return;
  const properties = (schema as { properties?: Record<string, { type?: unknown }> } | undefined)?.properties;
  if (!properties) return;
  const fields = values as Record<string, unknown>;
  for (const [name, { type }] of Object.entries(properties)) {
    if (!Object.hasOwn(fields, name)) continue;
    const value = fields[name];
    if (type === 'string' && Array.isArray(value)) fields[name] = value[0];
    else if (type === 'array' && typeof value === 'string') fields[name] = [value];
  }
}

/** The CSRF field of a form, read before the route's handler (and whether or not its schema held). */
export function csrfFieldOf(request: FastifyRequest): string {
  const body = request.body as { _csrf?: unknown } | null | undefined;
  return typeof body?._csrf === 'string' ? body._csrf : '';
}

const plainId = new RegExp(PlainIdPattern);

/** Ids in our URLs are short and plain; a query parameter that is not one filters nothing. */
export function isPlainId(id: string): boolean {
  return plainId.test(id);
}

export function sendPage(reply: FastifyReply, status: number, page: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(page);
}

/** An error page, framed with the navigation when the request is signed in. */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, status: number, title: string, message: string): FastifyReply {
  const user = request.portal ? { user: frameUser(request.portal) } : {};
  return sendPage(reply, status, errorPage({ status, title, message, requestId: request.id, ...user }));
}

/** The 400 page: a form, query or address the portal cannot read. */
export function sendBadRequest(request: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  return sendErrorPage(request, reply, 400, 'Bad request', message);
}

/** The 404 page: for unknown ids and for another account's ids alike. */
export function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendErrorPage(request, reply, 404, 'Not found', 'There is no such page in this account.');
}

/**
 * A page of a list, or null when the URL's cursor (`starting_after`) names nothing in it: an old or edited
 * link shows an empty list rather than an error.
 */
export async function pageOrNone<T>(listing: Promise<T>): Promise<T | null> {
  try {
    return await listing;
  } catch (error) {
    if (error instanceof ApiError && error.param === 'starting_after') return null;
    throw error;
  }
}

/** A redirect after a POST (303, so the browser follows with GET). */
export function seeOther(reply: FastifyReply, url: string): FastifyReply {
  return reply.redirect(url, 303);
}
