/**
 * Sends one signed webhook over HTTP(S). Behind an interface so tests and the benchmark can swap it; the
 * real one uses keep-alive agents, a hard timeout, and the SSRF-guarded DNS lookup.
 */
import http from 'node:http';
import https from 'node:https';
import { blockedLiteralHost, guardedLookup } from './ssrf-guard.js';

export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** What a receiver answered, or why there was no answer. `durationMs` is measured either way. */
export type WebhookResponse =
  | { readonly kind: 'response'; readonly status: number; readonly excerpt: string; readonly retryAfter: string | undefined; readonly durationMs: number }
  | { readonly kind: 'error'; readonly error: string; readonly durationMs: number };

export interface WebhookSender {
  send(request: WebhookRequest): Promise<WebhookResponse>;
  close(): void;
}

/** The first 2 KB of a response body is kept with each attempt. */
export const responseExcerptBytes = 2_048;

export function createHttpSender(options: { timeoutMs: number; allowPrivate: boolean; userAgent?: string }): WebhookSender {
  const lookup = guardedLookup(options.allowPrivate);
  // As many idle sockets are kept as may be busy: with fewer, every burst of answers closed the surplus and
  // the next claim opened them again (connect and close were a tenth of the dispatcher's CPU under load).
  const agentOptions = { keepAlive: true, maxSockets: 64, maxFreeSockets: 64, lookup } as const;
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  const userAgent = options.userAgent ?? 'callgate-webhooks/1';

  return {
    send(request) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      return new Promise<WebhookResponse>((resolve) => {
        let settled = false;
        // Declared before `finish`, which the early exits below call before the timer is set.
        let timer: NodeJS.Timeout | undefined;
        const finish = (response: WebhookResponse) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          resolve(response);
        };
        let url: URL;
        try {
          url = new URL(request.url);
        } catch {
          finish({ kind: 'error', error: 'invalid URL', durationMs: 0 });
          return;
        }
        const blocked = blockedLiteralHost(url, options.allowPrivate);
        if (blocked) {
          finish({ kind: 'error', error: blocked, durationMs: 0 });
          return;
        }
        const isHttps = url.protocol === 'https:';
        const req = (isHttps ? https : http).request(url, {
          method: 'POST',
          agent: isHttps ? httpsAgent : httpAgent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(request.body),
            'user-agent': userAgent,
            ...request.headers,
          },
        });
        timer = setTimeout(() => {
          req.destroy(new Error(`timed out after ${options.timeoutMs} ms`));
        }, options.timeoutMs);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          let kept = 0;
          res.on('data', (chunk: Buffer) => {
            if (kept < responseExcerptBytes) {
              chunks.push(chunk);
              kept += chunk.length;
            }
          });
          res.on('end', () => {
            const excerpt = Buffer.concat(chunks).subarray(0, responseExcerptBytes).toString('utf8');
            const retryAfter = res.headers['retry-after'];
            finish({ kind: 'response', status: res.statusCode ?? 0, excerpt, retryAfter, durationMs: elapsed() });
          });
          res.on('error', (error) => finish({ kind: 'error', error: error.message, durationMs: elapsed() }));
        });
        req.on('error', (error) => finish({ kind: 'error', error: error.message, durationMs: elapsed() }));
        req.end(request.body);
      });
    },
    close() {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}
