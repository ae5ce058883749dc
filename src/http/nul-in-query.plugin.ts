/** The API's refusal of U+0000 in a query string (nul-text.ts says why), before validation reads it. */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { refuseNulInQuery } from './nul-text.js';

async function nulInQuery(scope: FastifyInstance): Promise<void> {
  scope.addHook('preValidation', refuseNulInQuery);
}

export default fp(nulInQuery, { name: 'nul-in-query' });
