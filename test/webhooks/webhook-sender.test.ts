/**
 * The HTTP sender on its own, against local servers that misbehave in the ways receivers do: the timeout is
 * one deadline for the whole attempt (a body that trickles in forever ends it too), connections are kept
 * alive between attempts, and what was sent is what the receiver got. No storage is involved.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createHttpSender } from '../../src/features/webhook-delivery/webhook-sender.js';

describe('webhook sender', () => {
  const sockets = new Set<unknown>();
  const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
  let server: http.Server;
  let base: string;

  before(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        if (req.url === '/trickle') {
          // Headers at once, then a byte every 50 ms, never ending.
          res.writeHead(200, { 'content-type': 'text/plain' });
          const timer = setInterval(() => res.write('.'), 50);
          res.on('close', () => clearInterval(timer));
          return;
        }
        res.writeHead(202, { 'content-type': 'text/plain', 'retry-after': '3' });
        res.end('accepted');
      });
    });
    server.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends the body and headers as given, and reads status, answer and Retry-After', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: true, userAgent: 'callgate-test/1' });
    try {
      const body = JSON.stringify({ id: 'evt_1', note: 'ünïcödé' });
      const answer = await sender.send({ url: `${base}/hooks?x=1`, headers: { 'webhook-id': 'evt_1' }, body });
      assert.equal(answer.kind, 'response');
      assert.ok(answer.kind === 'response');
      assert.equal(answer.status, 202);
      assert.equal(answer.excerpt, 'accepted');
      assert.equal(answer.retryAfter, '3');
      const last = received.at(-1)!;
      assert.equal(last.body, body);
      assert.equal(last.headers['content-type'], 'application/json');
      assert.equal(last.headers['content-length'], String(Buffer.byteLength(body)));
      assert.equal(last.headers['user-agent'], 'callgate-test/1');
      assert.equal(last.headers['webhook-id'], 'evt_1');
    } finally {
      sender.close();
    }
  });

  it('keeps the connection alive between attempts to one receiver', async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: true });
    try {
      const before = sockets.size;
      for (let i = 0; i < 20; i++) {
        const answer = await sender.send({ url: `${base}/hooks`, headers: {}, body: '{}' });
        assert.equal(answer.kind === 'response' ? answer.status : answer.error, 202);
      }
      // The pool may dial a second connection while the first is still being handed back; never one per attempt.
      assert.ok(sockets.size - before <= 2, `twenty attempts one after another used ${sockets.size - before} connections`);
    } finally {
      sender.close();
    }
  });

  it('ends an attempt whose answer never finishes at the deadline, though bytes keep coming', async () => {
    const sender = createHttpSender({ timeoutMs: 400, allowPrivate: true });
    try {
      const answer = await sender.send({ url: `${base}/trickle`, headers: {}, body: '{}' });
      assert.deepEqual(answer.kind === 'error' ? answer.error : answer, 'timed out after 400 ms');
      assert.ok(answer.durationMs >= 390 && answer.durationMs < 2_000, `ended after ${answer.durationMs} ms`);
    } finally {
      sender.close();
    }
  });

  it("reports a refused connection in the network error's words", async () => {
    const sender = createHttpSender({ timeoutMs: 2_000, allowPrivate: true });
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    try {
      const answer = await sender.send({ url: `http://127.0.0.1:${port}/hooks`, headers: {}, body: '{}' });
      assert.match(answer.kind === 'error' ? answer.error : '', /ECONNREFUSED/);
    } finally {
      sender.close();
    }
  });
});
