/**
 * The webhook receiver of the dispatcher benchmark, in a process of its own (forked by bench/dispatcher-bench.ts):
 * a keep-alive HTTP server that answers 200 at once, notes when each webhook-id first arrived (wall clock, so
 * the parent can compare it with commit times noted in the dispatcher's process) and checks the signature of
 * every n-th request with the `standardwebhooks` package, the reference implementation a customer would use.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { processStats, wallClockMs, watchEventLoop, type ProcessStats } from './process-stats.js';

export interface Collected {
  /** webhook-id and the wall-clock ms its first request arrived, in arrival order. */
  readonly firstArrivals: readonly (readonly [string, number])[];
  readonly requests: number;
  /** Requests for a webhook-id that had arrived before (a delivery sent twice). */
  readonly repeats: number;
  readonly verified: number;
  readonly verifyFailures: number;
  readonly firstVerifyFailure: string | null;
}

export type ReceiverMessage =
  | { readonly type: 'ready'; readonly port: number }
  | { readonly type: 'configured' }
  | { readonly type: 'reached'; readonly count: number }
  | { readonly type: 'collected'; readonly collected: Collected }
  | { readonly type: 'stats'; readonly stats: ProcessStats }
  | { readonly type: 'stopped' }
  | { readonly type: 'failed'; readonly message: string };

export type ReceiverRequest =
  /** The endpoint's signing secret, and how many requests apart the signature checks are. */
  | { readonly type: 'configure'; readonly secret: string; readonly verifyEvery: number }
  /** Answer `reached` once this many distinct webhook-ids have arrived since the last `collect`. */
  | { readonly type: 'wait'; readonly count: number }
  /** Hand over what arrived since the last `collect` and start counting afresh. */
  | { readonly type: 'collect' }
  | { readonly type: 'stats' }
  | { readonly type: 'stop' };

function send(message: ReceiverMessage): void {
  process.send?.(message);
}

watchEventLoop();
let webhook: Webhook | undefined;
let verifyEvery = 0;
let arrivals = new Map<string, number>();
let requests = 0;
let repeats = 0;
let verified = 0;
let verifyFailures = 0;
let firstVerifyFailure: string | null = null;
let waitingFor: number | null = null;

function check(headers: http.IncomingHttpHeaders, body: string): void {
  if (!webhook) return;
  try {
    webhook.verify(body, headers as Record<string, string>);
    verified++;
  } catch (error) {
    verifyFailures++;
    firstVerifyFailure ??= (error as Error).message;
  }
}

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const at = wallClockMs();
  requests++;
  const id = String(req.headers['webhook-id'] ?? '');
  if (arrivals.has(id)) repeats++;
  else arrivals.set(id, at);
  const verify = verifyEvery > 0 && requests % verifyEvery === 0;
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => {
    if (verify) chunks.push(chunk);
  });
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
    res.end('ok');
    if (verify) check(req.headers, Buffer.concat(chunks).toString('utf8'));
    if (waitingFor !== null && arrivals.size >= waitingFor) {
      send({ type: 'reached', count: arrivals.size });
      waitingFor = null;
    }
  });
});

process.on('message', (message: ReceiverRequest) => {
  switch (message.type) {
    case 'configure':
      webhook = new Webhook(message.secret);
      verifyEvery = message.verifyEvery;
      return send({ type: 'configured' });
    case 'wait':
      if (arrivals.size >= message.count) return send({ type: 'reached', count: arrivals.size });
      waitingFor = message.count;
      return;
    case 'collect': {
      const collected: Collected = {
        firstArrivals: [...arrivals],
        requests,
        repeats,
        verified,
        verifyFailures,
        firstVerifyFailure,
      };
      arrivals = new Map();
      requests = repeats = verified = verifyFailures = 0;
      firstVerifyFailure = null;
      return send({ type: 'collected', collected });
    }
    case 'stats':
      return send({ type: 'stats', stats: processStats() });
    case 'stop':
      server.closeAllConnections();
      server.close(() => {
        send({ type: 'stopped' });
        process.disconnect();
      });
      return;
  }
});

if (!process.send) {
  process.stderr.write('bench/receiver-process.ts is started by bench/run.ts (npm run bench), not by hand\n');
  process.exit(2);
}

server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as AddressInfo).port }));
