/** Requests Node's HTTP server refuses before Fastify sees them, answered as every other error (client-errors.ts). */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { answerNodeEvents } from './client-errors.js';

async function clientErrors(app: FastifyInstance): Promise<void> {
  answerNodeEvents(app.server);
}

export default fp(clientErrors, { name: 'client-errors' });
