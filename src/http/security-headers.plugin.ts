/**
 * The security headers every answer carries. Served at an https public URL, that is HSTS
 * (config.strictTransportSecurity), so browsers keep to https for the portal and the API from then on; the
 * portal's pages and the docs set their own page headers.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import fp from 'fastify-plugin';

export interface SecurityHeadersOptions {
  /** The Strict-Transport-Security value; none is sent without one. */
  readonly strictTransportSecurity: string | undefined;
}

async function securityHeaders(app: FastifyInstance, { strictTransportSecurity }: SecurityHeadersOptions): Promise<void> {
  if (strictTransportSecurity === undefined) return;
  app.addHook('onSend', async (_request, reply) => {
    reply.header('strict-transport-security', strictTransportSecurity);
  });
}

export default fp(securityHeaders, { name: 'security-headers' });

/** For the answers no hook sees (the router's own errors). */
export function setSecurityHeaders(reply: FastifyReply, { strictTransportSecurity }: SecurityHeadersOptions): void {
  if (strictTransportSecurity !== undefined) reply.header('strict-transport-security', strictTransportSecurity);
}
