/**
 * A local webhook receiver (Svix's TestReceiver shape): records every request with its raw body and
 * headers, and answers with whatever the test sets, which may change mid-test to drive retries.
 */
import type http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { startLocalServer } from './local-server.js';

export interface ReceivedWebhook {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly receivedAt: number;
  /** When the answer was sent (Date.now()); undefined until then, or when the connection went first. */
  answeredAt: number | undefined;
}

export interface ReceiverReply {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering (to provoke timeouts). */
  delayMs?: number;
}

export interface WebhookReceiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** Answers for the next requests, in order; when used up, `fallback` answers. */
  queue(...replies: ReceiverReply[]): void;
  fallback: ReceiverReply;
  /** When set, decides each answer from the request (before the queue); undefined leaves it to the queue. */
  respond: ((hook: ReceivedWebhook) => ReceiverReply | undefined) | undefined;
  /** Resolves once `count` requests were received. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
  /** Stops listening (the port is then refused) and starts again on the same port. */
  stop(): Promise<void>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The fields of a call event's data, sorted: what a single call's call.completed carries (spec 6's, then
 * the provider's `analysis`, and the call's `to` and `metadata`, so that a receiver matches it without a read).
 */
export const callEventFields = [
  'agent_id',
  'analysis',
  'duration_seconds',
  'ended_at',
  'id',
  'metadata',
  'started_at',
  'status',
  'to',
  'transcript_summary',
];

/** The same of call.failed. */
export const callFailedEventFields = ['agent_id', 'failed_at', 'failure_message', 'failure_reason', 'id', 'metadata', 'status', 'to'];

/** Verifies a received webhook with `secret` as a receiver would (Standard Webhooks) and returns its payload. */
export function verifyWebhook(hook: ReceivedWebhook, secret: string): Record<string, any> {
  return new Webhook(secret).verify(hook.body, {
    'webhook-id': String(hook.headers['webhook-id']),
    'webhook-timestamp': String(hook.headers['webhook-timestamp']),
    'webhook-signature': String(hook.headers['webhook-signature']),
  }) as Record<string, any>;
}

export async function startWebhookReceiver(path = '/hooks'): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const replies: ReceiverReply[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];

  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hook: ReceivedWebhook = {
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
        answeredAt: undefined,
      };
      received.push(hook);
      for (const waiter of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
      const reply = receiver.respond?.(hook) ?? replies.shift() ?? receiver.fallback;
      const answer = () => {
        if (res.destroyed) return;
        hook.answeredAt = Date.now();
        res.writeHead(reply.status, { 'content-type': 'text/plain', ...reply.headers });
        res.end(reply.body ?? 'ok');
      };
      // Unref'd: an answer that never comes (the client gave up) must not keep a test run alive.
      if (reply.delayMs) setTimeout(answer, reply.delayMs).unref();
      else answer();
    });
  };

  const server = await startLocalServer(handler);

  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${server.port}${path}`,
    received,
    fallback: { status: 200, body: 'ok' },
    respond: undefined,
    queue: (...next) => void replies.push(...next),
    waitFor(count, timeoutMs = 10_000) {
      if (received.length >= count) return Promise.resolve(received.slice());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`received ${received.length} of ${count} webhooks within ${timeoutMs} ms`)),
          timeoutMs,
        );
        waiters.push({
          count,
          resolve: () => {
            clearTimeout(timer);
            resolve(received.slice());
          },
        });
      });
    },
    stop: server.stop,
    restart: server.restart,
    close: server.stop,
  };
  return receiver;
}

/**
 * The most requests a receiver had open at once: each from its receipt until it was answered, or until the
 * sender gave up (`givenUpAfterMs` after the receipt at the latest: its timeout, less a margin for the
 * request's way in), whichever came first. A late answer (a busy receiver) does not keep open a request its
 * sender had already given up on.
 */
export function mostOpenAtOnce(received: readonly ReceivedWebhook[], givenUpAfterMs: number): number {
  const edges = received.flatMap((hook) => [
    { at: hook.receivedAt, step: 1 },
    { at: Math.min(hook.answeredAt ?? Number.POSITIVE_INFINITY, hook.receivedAt + givenUpAfterMs), step: -1 },
  ]);
  // An answer and a receipt at the same millisecond: the answer first (the slot it frees is the one taken).
  edges.sort((a, b) => a.at - b.at || a.step - b.step);
  let open = 0;
  let most = 0;
  for (const edge of edges) {
    open += edge.step;
    most = Math.max(most, open);
  }
  return most;
}
