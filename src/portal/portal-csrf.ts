/**
 * Cross-site request forgery checks of the portal's forms.
 *
 * Signed-in forms carry the session's random token in a hidden `_csrf` field; a page of another site can
 * neither read it nor guess it, so a forged POST fails the constant-time comparison.
 *
 * The sign-in form has no session yet. Against login CSRF (a page of another site signing the victim into
 * the attacker's account) its POST must pass two checks. It carries an Origin header of this site: browsers
 * attach Origin to every form POST and a page cannot forge it (an older browser that sends no Origin is
 * judged by Referer; a request with neither is refused). And its hidden `_csrf` field matches the
 * `cg_signin` cookie the sign-in page set (a double-submit token): another site can neither read that
 * cookie nor set it. Neither check needs a server secret, so both hold across several API processes.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

/** The cookie holding the sign-in form's token, sent back only to the sign-in path. */
export const signInCsrfCookie = 'cg_signin';

/** The sign-in token the browser already holds (so two open tabs share one), or a new one. */
export function signInCsrfToken(request: FastifyRequest): string {
  const held = request.cookies[signInCsrfCookie];
  return held !== undefined && /^[A-Za-z0-9_-]{32}$/.test(held) ? held : randomBytes(24).toString('base64url');
}

function originOf(url: string | undefined): string | undefined {
  if (!url || url === 'null') return undefined;
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}

/** True when the request's Origin (or Referer) is this site: the public URL, or the host it was sent to. */
export function isSameOrigin(request: FastifyRequest, publicUrl: string): boolean {
  const header = request.headers.origin;
  const claimed = header !== undefined ? originOf(header) : originOf(request.headers.referer);
  if (!claimed) return false;
  const own = new Set([originOf(publicUrl), originOf(`${request.protocol}://${request.host}`)]);
  return own.has(claimed);
}

/** Constant-time comparison of the submitted token with the expected one; no token matches nothing. */
export function csrfTokenMatches(submitted: string, expected: string): boolean {
  const a = Buffer.from(submitted, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return b.length > 0 && a.length === b.length && timingSafeEqual(a, b);
}
