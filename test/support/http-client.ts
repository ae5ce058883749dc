/** POST /v1/calls over real HTTP (fetch), for the idempotency tests that need real sockets. */
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly body: any;
}

export async function postCall(
  baseUrl: string,
  token: string,
  body: unknown,
  idempotencyKey?: string,
  options: { signal?: AbortSignal } = {},
): Promise<HttpAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
  const res = await fetch(`${baseUrl}/v1/calls`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? null : (JSON.parse(text) as unknown) };
}

/** Starts listening on a free loopback port and returns the base URL. */
export async function listenOnFreePort(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as AddressInfo;
  return `http://127.0.0.1:${address.port}`;
}

/** `n` copies of the same request, all sent at once. */
export function concurrently<T>(n: number, send: (index: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, index) => send(index)));
}
