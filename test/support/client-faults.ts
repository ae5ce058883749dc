/**
 * What the TypeScript client's tests (clients/typescript/test) put between the client and the real server:
 * a fetch that records every try and can break it as a network would, and a TCP proxy that swallows an
 * answer the server did send.
 */
import net from 'node:net';
import type { FetchLike } from '../../clients/typescript/src/index.js';

export interface Attempt {
  readonly method: string;
  readonly url: string;
  readonly idempotencyKey: string | null;
  readonly startedAt: number;
  status?: number;
  retryAfter?: string | null;
}

/**
 * How a try breaks: `drop`, the request reaches the server and its whole answer arrives, then the
 * connection "resets" before the client sees it; `late`, the answer is held until the client's timeout
 * aborts the try; `refuse`, ECONNREFUSED before anything is sent.
 */
export type Fault = 'drop' | 'late' | 'refuse' | undefined;

const networkError = (code: string, message: string) =>
  new TypeError('fetch failed', { cause: Object.assign(new Error(message), { code }) });

export function recordingFetch(faults: Fault[] = []): { fetch: FetchLike; attempts: Attempt[] } {
  const attempts: Attempt[] = [];
  const wrapped: FetchLike = async (url, init) => {
    const headers = new Headers(init.headers);
    const attempt: Attempt = {
      method: String(init.method),
      url,
      idempotencyKey: headers.get('idempotency-key'),
      startedAt: Date.now(),
    };
    const fault = faults[attempts.length];
    attempts.push(attempt);
    if (fault === 'refuse') throw networkError('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1');
    const response = await fetch(url, init);
    attempt.status = response.status;
    attempt.retryAfter = response.headers.get('retry-after');
    if (fault === 'drop') {
      await response.arrayBuffer();
      throw networkError('ECONNRESET', 'read ECONNRESET');
    }
    if (fault === 'late') {
      const signal = init.signal!;
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
    }
    return response;
  };
  return { fetch: wrapped, attempts };
}

export interface AnswerEatingProxy {
  readonly url: string;
  /** Answers to swallow: for each, the connection is destroyed when the server's first bytes arrive. */
  eatAnswers: number;
  close(): Promise<void>;
}

/** A TCP proxy to `port` that can cut a connection just as the server's answer comes back. */
export async function startAnswerEatingProxy(port: number): Promise<AnswerEatingProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (proxy.eatAnswers > 0) {
        proxy.eatAnswers--;
        client.destroy();
        upstream.destroy();
        return;
      }
      client.write(chunk);
    });
    upstream.on('end', () => client.end());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxy: AnswerEatingProxy = {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    eatAnswers: 0,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
