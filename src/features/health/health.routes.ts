import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';

const Health = Type.Object({ status: Type.Literal('ok'), database: Type.String() });

/** `GET /healthz`: the process answers and its database does too. */
export const healthRoutes: FastifyPluginAsyncTypebox<{ db: Db; dialect: string }> = async (app, { db, dialect }) => {
  app.get('/healthz', { schema: { response: { 200: Health } } }, async () => {
    await sql`select 1`.execute(db);
    return { status: 'ok' as const, database: dialect };
  });
  registerMethodNotAllowed(app, '/healthz', ['GET']);
};
