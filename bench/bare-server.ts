/**
 * The scale beside POST /v1/calls: bare Fastify with one POST route that parses the same JSON and answers
 * 201 with a body of a created call's shape, no logger, hooks or database. A trend figure (what the HTTP
 * stack alone costs on this machine in this run), not a target. Started by bench/calls.ts with PORT set.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });
let n = 0;
app.post('/v1/calls', async (request, reply) => {
  const body = request.body as { agent_id?: string; to?: string };
  n += 1;
  return reply.code(201).send({
    id: `call_conv_${String(n).padStart(26, '0')}`,
    agent_id: body.agent_id,
    to: body.to,
    status: 'initiated',
    created_at: new Date().toISOString(),
  });
});
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
