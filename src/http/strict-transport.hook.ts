/**
 * Served at an https public URL, every answer carries HSTS (config.strictTransportSecurity), so browsers
 * keep to https for the portal and the API from then on.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';

export function registerStrictTransportSecurity(app: FastifyInstance, value: string | undefined): void {
  if (value === undefined) return;
  app.addHook('onSend', async (_request, reply) => {
    reply.header('strict-transport-security', value);
  });
}

/** For the answers no hook sees (the router's own errors). */
export function setStrictTransportSecurity(reply: FastifyReply, value: string | undefined): void {
  if (value !== undefined) reply.header('strict-transport-security', value);
}
