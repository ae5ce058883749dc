import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import { dialectOf, type Db } from '../../db/database.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';

const Health = Type.Object({ status: Type.Literal('ok'), database: Type.String() });

const Home = Type.Object({
  name: Type.Literal('callgate'),
  message: Type.String(),
  portal_url: Type.String(),
  api_url: Type.String(),
  health_url: Type.String(),
});

/**
 * `GET /healthz`: the process answers and its database does too. On the API port and on the metrics port
 * (CALLGATE_METRICS_PORT), where a worker-only process, which has no API port, is probed.
 */
export const livenessRoutes: FastifyPluginAsyncTypebox<{ db: Db }> = async (app, { db }) => {
  const database = dialectOf(db);
  app.get('/healthz', { schema: { response: { 200: Health } } }, async () => {
    await sql`select 1`.execute(db);
    return { status: 'ok' as const, database };
  });
  registerMethodNotAllowed(app, '/healthz', ['GET']);
};

/**
 * `GET /healthz` (livenessRoutes) and `GET /`: where to go from here, for someone who opened the server's
 * address: a browser is sent to the portal, anything else gets the addresses as JSON (a 404 there told a
 * newcomer nothing).
 */
export const healthRoutes: FastifyPluginAsyncTypebox<{ db: Db; publicUrl: string }> = async (app, { db, publicUrl }) => {
  await app.register(livenessRoutes, { db });

  app.get('/', { schema: { response: { 200: Home } } }, async (request, reply) => {
    reply.header('vary', 'Accept');
    if ((request.headers.accept ?? '').includes('text/html')) return reply.redirect('/developers', 302);
    return {
      name: 'callgate' as const,
      message:
        'This is the callgate API: start a call with POST /v1/calls and a Bearer API key. API keys, webhooks and a quick start are in the developer portal.',
      portal_url: `${publicUrl}/developers`,
      api_url: `${publicUrl}/v1/calls`,
      health_url: `${publicUrl}/healthz`,
    };
  });
  registerMethodNotAllowed(app, '/', ['GET']);
};
