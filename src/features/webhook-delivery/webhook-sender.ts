/**
 * Sends one signed webhook over HTTP(S). Behind an interface so tests and the benchmark can swap it; the
 * real one uses undici's connection pools (kept alive), a hard timeout, and the SSRF-guarded DNS lookup.
 */
import { EventEmitter } from 'node:events';
import { Agent } from 'undici';
import { blockedLiteralHost, guardedLookup } from '../webhook-endpoints/ssrf-guard.js';

export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What a receiver answered, or why there was no answer. `durationMs` is measured either way. */
export type WebhookResponse =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly excerpt: string;
      readonly retryAfter: string | undefined;
      readonly durationMs: number;
    }
  | { readonly kind: 'error'; readonly error: string; readonly durationMs: number };

export interface WebhookSender {
  send(request: WebhookRequest): Promise<WebhookResponse>;
  close(): void;
}

/** The first 2 KB of a response body is kept with each attempt. */
export const responseExcerptBytes = 2_048;

export function createHttpSender(options: { timeoutMs: number; allowPrivate: boolean; userAgent?: string }): WebhookSender {
  // undici rather than node:http: the same POST costs about half the CPU (0.19 → 0.09 ms a request on this
  // machine), and the client was a fifth of a busy dispatcher's time. Each origin gets a pool of up to 64
  // kept-alive connections, as many as the dispatcher attempts at once. Every new connection resolves its
  // name through guardedLookup (net.connect's `lookup`), so the address is judged where it is dialled; IP
  // literals skip DNS and are judged below, before any connection.
  const agent = new Agent({
    connections: 64,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    connect: { lookup: guardedLookup(options.allowPrivate), timeout: options.timeoutMs },
  });
  const userAgent = options.userAgent ?? 'callgate-webhooks/1';

  return {
    async send(request) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return { kind: 'error', error: 'invalid URL', durationMs: 0 };
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        return { kind: 'error', error: `unsupported protocol ${url.protocol}`, durationMs: 0 };
      const blocked = blockedLiteralHost(url, options.allowPrivate);
      if (blocked) return { kind: 'error', error: blocked, durationMs: 0 };

      // One deadline for the whole attempt: connecting, sending, the answer's headers and its body. undici
      // takes an EventEmitter as its signal (documented beside AbortSignal); an AbortController per attempt
      // cost the dispatcher 5 % of its time.
      const deadline = new EventEmitter() as EventEmitter & { aborted: boolean };
      deadline.aborted = false;
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        deadline.aborted = true;
        deadline.emit('abort');
      }, options.timeoutMs);
      try {
        const res = await agent.request({
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'user-agent': userAgent, ...request.headers },
          body: request.body,
          signal: deadline,
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
        });
        // The body is read to its end, so that the connection can carry the next request; only its start is kept.
        const chunks: Buffer[] = [];
        let kept = 0;
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          if (kept < responseExcerptBytes) {
            chunks.push(chunk);
            kept += chunk.length;
          }
        }
        const excerpt = Buffer.concat(chunks).subarray(0, responseExcerptBytes).toString('utf8');
        const retryAfter = res.headers['retry-after'];
        return {
          kind: 'response',
          status: res.statusCode,
          excerpt,
          retryAfter: Array.isArray(retryAfter) ? retryAfter[0] : retryAfter,
          durationMs: elapsed(),
        };
      } catch (error) {
        const message = timedOut ? `timed out after ${options.timeoutMs} ms` : describe(error);
        return { kind: 'error', error: message, durationMs: elapsed() };
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      void agent.destroy().catch(() => undefined);
    },
  };
}

/** The error of a failed attempt in words, with the network error's own words where undici wraps one. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && !error.message.includes(cause.message)) return `${error.message}: ${cause.message}`;
  return error.message;
}
