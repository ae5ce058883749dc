/**
 * GET /favicon.ico, at the root where every browser asks for it on every page of the portal and of /docs:
 * without it each page logged a 404 in the browser's console.
 */
import fs from 'node:fs';
import type { FastifyPluginAsync } from 'fastify';

const favicon = fs.readFileSync(new URL('./assets/favicon.ico', import.meta.url));

export const portalFaviconRoutes: FastifyPluginAsync = async (app) => {
  app.get('/favicon.ico', { schema: { hide: true } }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=86400').type('image/x-icon').send(favicon),
  );
};
