/**
 * The machinery the fakes of ElevenLabs, Retell and Vapi share: a local HTTP server that records every
 * request, answers by a default behaviour (the fake's model of the vendor), and lets a test program other
 * answers per route (status, body, headers, delay, a dropped connection) or stop the server to make it
 * unreachable.
 */
import type http from 'node:http';
import { startLocalServer } from './local-server.js';

export interface FakeProviderRequest<Route extends string> {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
  /** The JSON body, parsed; null when there was none, the raw text when it was not JSON. */
  readonly body: unknown;
  readonly route: Route | 'other';
}

/** A call's recording as a fake serves it: the bytes and the content type the vendor sends them with. */
export interface FakeRecording {
  readonly contentType: string;
  readonly bytes: Buffer;
}

/** Whether a request carried a credential of any kind (a recording URL must be fetched without one). */
export function carriesCredential(request: Pick<FakeProviderRequest<string>, 'headers'>): boolean {
  const { headers } = request;
  return ['authorization', 'xi-api-key', 'x-api-key', 'api-key', 'cookie'].some((name) => headers[name] !== undefined);
}

export interface FakeProviderReply {
  status: number;
  /** Sent as JSON; a string or a Buffer (audio) is sent as is. */
  body?: unknown;
  headers?: Record<string, string>;
  /** Wait this long before answering (to provoke timeouts). */
  delayMs?: number;
  /** Drop the connection instead of answering. */
  destroy?: boolean;
  /** The default behaviour runs all the same, whatever this reply says (a create places its call): a lost answer. */
  place?: boolean;
}

export interface FakeProviderServer<Route extends string> {
  readonly url: string;
  readonly requests: FakeProviderRequest<Route>[];
  /** Answers for the next requests of a route, in order; when used up, the default behaviour answers. */
  queue(route: Route, ...replies: FakeProviderReply[]): void;
  /** When set, decides an answer from the request before the queue; undefined leaves it to the queue. */
  respond: ((request: FakeProviderRequest<Route>) => FakeProviderReply | undefined) | undefined;
  requestsTo(route?: Route): FakeProviderRequest<Route>[];
  /**
   * The next request of `route` is carried out as usual (a create places its call), but its answer is lost:
   * the connection drops instead, as when a network fails after the provider acted.
   */
  loseNextAnswer(route: Route): void;
  /** Forgets requests, queued replies and `respond`. */
  resetRequests(): void;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

function parseBody(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export async function startFakeProviderServer<Route extends string>(
  routeOf: (method: string, path: string) => Route | 'other',
  defaultReply: (request: FakeProviderRequest<Route>) => FakeProviderReply,
): Promise<FakeProviderServer<Route>> {
  const requests: FakeProviderRequest<Route>[] = [];
  const replies = new Map<Route, FakeProviderReply[]>();
  const lost = new Map<Route, number>();
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://fake.local');
      const method = req.method ?? 'GET';
      const request: FakeProviderRequest<Route> = {
        method,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: parseBody(Buffer.concat(chunks).toString('utf8')),
        route: routeOf(method, url.pathname),
      };
      requests.push(request);
      const route = request.route === 'other' ? undefined : request.route;
      const lose = route !== undefined && (lost.get(route) ?? 0) > 0;
      if (lose) lost.set(route, lost.get(route)! - 1);
      const reply = lose
        ? { ...defaultReply(request), destroy: true }
        : (fake.respond?.(request) ?? (route === undefined ? undefined : replies.get(route)?.shift()) ?? defaultReply(request));
      if (reply.place) defaultReply(request);
      const answer = () => {
        if (res.destroyed) return;
        if (reply.destroy) {
          req.socket.destroy();
          return;
        }
        const { body } = reply;
        const sent = body === undefined ? '' : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(sent);
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  };
  const server = await startLocalServer(handler);
  const fake: FakeProviderServer<Route> = {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    respond: undefined,
    queue(route, ...next) {
      replies.set(route, [...(replies.get(route) ?? []), ...next]);
    },
    loseNextAnswer(route) {
      lost.set(route, (lost.get(route) ?? 0) + 1);
    },
    requestsTo: (route) => (route === undefined ? requests.slice() : requests.filter((request) => request.route === route)),
    resetRequests() {
      requests.length = 0;
      replies.clear();
      lost.clear();
      fake.respond = undefined;
    },
    stop: server.stop,
    restart: server.restart,
  };
  return fake;
}

/**
 * Puts a fake's recordings out of reach and back: its recording requests answered 503, or the whole server
 * gone (connections refused) until `up`.
 */
export function recordingOutage<Route extends string>(
  server: FakeProviderServer<Route>,
  isRecording: (request: FakeProviderRequest<Route>) => boolean,
  errorBody: unknown,
): { down(how: 'error' | 'gone'): Promise<void>; up(): Promise<void> } {
  let gone = false;
  return {
    async down(how) {
      if (how === 'error') {
        server.respond = (request) => (isRecording(request) ? { status: 503, body: errorBody } : undefined);
        return;
      }
      if (!gone) await server.stop();
      gone = true;
    },
    async up() {
      server.respond = undefined;
      if (gone) await server.restart();
      gone = false;
    },
  };
}
