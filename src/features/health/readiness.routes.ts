/**
 * `GET /readyz`: 200 when this process can do its work, 503 naming what is wrong (a load balancer stops
 * sending it requests; an orchestrator waits before it rolls on). Served on the API port and, when
 * CALLGATE_METRICS_PORT is set, on that port too, so that a worker-only process can be probed.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { registerMethodNotAllowed } from '../../errors/error-handler.js';
import { checkReadiness, type ReadinessDeps } from './readiness.service.js';

const Check = Type.Object({
  /** skipped: not run in this process (the worker check where no worker runs); it does not make it unready. */
  status: Type.Union([Type.Literal('ok'), Type.Literal('failing'), Type.Literal('skipped')]),
  reason: Type.Optional(Type.String()),
  /** On a check that passes: what an operator should know all the same (a newer version's migrations). */
  note: Type.Optional(Type.String()),
});
const ReadinessBody = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('not_ready')]),
  /** The failing checks' reasons in one sentence, when not ready. */
  reason: Type.Optional(Type.String()),
  checks: Type.Object({ database: Check, migrations: Check, worker: Check }),
});

export const readinessRoutes: FastifyPluginAsyncTypebox<{ deps: ReadinessDeps }> = async (app, { deps }) => {
  app.get('/readyz', { schema: { response: { 200: ReadinessBody, 503: ReadinessBody } } }, async (_request, reply) => {
    const readiness = await checkReadiness(deps);
    const checks = Object.fromEntries(
      Object.entries(readiness.checks).map(([name, check]) => [
        name,
        check.ok
          ? { status: check.skipped ? ('skipped' as const) : ('ok' as const), ...(check.note ? { note: check.note } : {}) }
          : { status: 'failing' as const, reason: check.reason ?? 'failing' },
      ]),
    ) as Record<keyof typeof readiness.checks, { status: 'ok' | 'failing' | 'skipped'; reason?: string; note?: string }>;
    reply.header('cache-control', 'no-store');
    if (readiness.ready) return { status: 'ready' as const, checks };
    const reason = Object.values(readiness.checks)
      .flatMap((check) => (check.ok || !check.reason ? [] : [check.reason]))
      .join(' ');
    return reply.code(503).send({ status: 'not_ready' as const, reason, checks });
  });
  registerMethodNotAllowed(app, '/readyz', ['GET']);
};
