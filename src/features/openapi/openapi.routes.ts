/**
 * The API's description: GET /v1/openapi.json (the OpenAPI 3.1 document, no key needed) and GET /docs
 * (a reference page rendered from it on the server: no script, no asset from another site).
 */
import fs from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { renderDocsPage } from './docs.view.js';
import { openApiPath, swaggerOptions } from './openapi.document.js';

/** The version of the document's API (its paths say v1). */
export const apiVersion = '1';

const docsCss = fs.readFileSync(new URL('./assets/docs.css', import.meta.url));

/** The same policy as the portal's pages: our own stylesheet, nothing else (there is no script). */
const pageHeaders = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/**
 * Registered before any other route: @fastify/swagger learns the routes from the root's onRoute hook (so
 * this plugin is not encapsulated). The document is built once, when first asked (every route is known by
 * then), and kept as text.
 */
async function openApi(app: FastifyInstance): Promise<void> {
  app.register(fastifySwagger, swaggerOptions(apiVersion));
  let documentJson: string | undefined;
  let docsPage: string | undefined;

  app.get(openApiPath, async (_request, reply) => {
    documentJson ??= JSON.stringify(app.swagger());
    // Text with a JSON type passes through Fastify untouched (no serializer).
    return reply.type('application/json; charset=utf-8').header('access-control-allow-origin', '*').send(documentJson);
  });

  app.get('/docs', async (_request, reply) => {
    docsPage ??= renderDocsPage(app.swagger() as never);
    return reply.headers(pageHeaders).type('text/html; charset=utf-8').send(docsPage);
  });

  app.get('/docs/docs.css', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=300').type('text/css; charset=utf-8').send(docsCss),
  );
}

export const openApiRoutes = fp(openApi, { name: 'openapi' });
