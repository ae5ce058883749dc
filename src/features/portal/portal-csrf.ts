/**
 * Cross-site request forgery checks of the portal's forms.
 *
 * Signed-in forms carry the session's random token in a hidden `_csrf` field; a page of another site can
 * neither read it nor guess it, so a forged POST fails the constant-time comparison.
 *
 * The sign-in form has no session yet. Against login CSRF (a page of another site signing the victim into
 * the attacker's account) its POST must carry an Origin header of this site: browsers attach Origin to
 * every form POST and a page cannot forge it, so this needs no pre-session cookie and no server secret,
 * and it holds across several API processes. An older browser that sends no Origin is judged by Referer
 * instead; a request with neither (no browser form sends that) is refused. We chose this over a signed
 * double-submit cookie, which would need a secret shared by every process.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

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

/** Constant-time comparison of the submitted token with the session's. */
export function csrfTokenMatches(submitted: string, expected: string): boolean {
  const a = Buffer.from(submitted, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}
