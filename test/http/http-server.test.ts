/**
 * The HTTP server's own edges on a real port: requests Node would answer by itself (no Host, an Expect we do
 * not meet, CONNECT) get callgate's JSON errors, slow clients are cut off at the configured timeouts while
 * /healthz is still served, and an https public URL sends Strict-Transport-Security on every response.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { parseResponse, rawRequest, type RawResponse } from '../support/raw-http.js';

function assertJsonError(res: RawResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res));
  assert.match(res.headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.equal(body.error, code);
  assert.equal(typeof body.message, 'string');
  assert.match(String(body.request_id), /^req_[0-9a-z]+$/);
  assert.equal(res.headers['x-request-id'], body.request_id);
}

async function listen(t: TestApp): Promise<number> {
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return (t.app.server.address() as net.AddressInfo).port;
}

describe('requests Node would answer by itself get JSON errors', () => {
  let t: TestApp;
  let port: number;
  before(async () => {
    t = await startTestApp('sqlite');
    port = await listen(t);
  });
  after(async () => t.close());

  it('an HTTP/1.1 request without Host is 400 invalid_request in JSON; HTTP/1.0, which has no Host, is served', async () => {
    const res = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n');
    assertJsonError(res, 400, 'invalid_request');
    assert.match(JSON.parse(res.body).message, /Host/);
    const old = await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n');
    assert.equal(old.status, 200, JSON.stringify(old));
    assert.deepEqual(JSON.parse(old.body), { status: 'ok', database: 'sqlite' });
    // Two Host lines are refused too (RFC 9112 3.2): a proxy and the server could read different hosts.
    const twice = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: a.example\r\nhost: b.example\r\nConnection: close\r\n\r\n');
    assertJsonError(twice, 400, 'invalid_request');
    assert.match(JSON.parse(twice.body).message, /more than one Host/);
  });

  it('an Expect other than 100-continue is 417 expectation_failed in JSON; 100-continue still works', async () => {
    const body = JSON.stringify({ agent_id: t.seed.agentId, to: '+14155550123' });
    const head = `POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.seed.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n`;
    assertJsonError(await rawRequest(port, `${head}Expect: something-else\r\n\r\n${body}`), 417, 'expectation_failed');
    const created = await rawRequest(port, `${head}Expect: 100-continue\r\n\r\n${body}`);
    // Node sends "100 Continue" first; the final answer follows it.
    const final = created.status === 100 ? parseResponse(created.body) : created;
    assert.equal(final.status, 201, JSON.stringify(created));
  });

  it('CONNECT is 405 method_not_allowed in JSON, then the connection is closed', async () => {
    assertJsonError(await rawRequest(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 405, 'method_not_allowed');
    const healthz = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(healthz.status, 200);
  });
});

/**
 * The app on a real port with `timeouts` (the CALLGATE_*_TIMEOUT_MS settings) for the describe that calls it:
 * clients that send slowly, and the close of the server's side of their connections.
 */
function serverWithTimeouts(timeouts: Record<string, string>) {
  let t: TestApp;
  let port: number;
  /** The server's side of every connection, by the client's port. */
  const serverSockets = new Map<number, net.Socket>();
  before(async () => {
    t = await startTestApp('sqlite', { env: timeouts });
    t.app.server.on('connection', (socket: net.Socket) => serverSockets.set(socket.remotePort!, socket));
    port = await listen(t);
  });
  after(async () => t.close());

  /** A connection that keeps sending `chunk` every 100 ms after `first`, as long as it may; all it receives is kept. */
  function slowClient(first: string, chunk: string | null): Promise<{ socket: net.Socket; received: () => string }> {
    return new Promise((resolve, reject) => {
      // Half-open allowed: like an attacker, it does not close when the server does.
      const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      let text = '';
      socket.on('data', (data: Buffer) => (text += data.toString('utf8')));
      socket.on('error', () => undefined); // EPIPE / ECONNRESET once the server has closed
      const ticker = chunk === null ? undefined : setInterval(() => socket.writable && socket.write(chunk), 100);
      socket.on('close', () => clearInterval(ticker));
      socket.once('connect', () => {
        if (first !== '') socket.write(first);
        resolve({ socket, received: () => text });
      });
      socket.once('error', reject);
    });
  }

  /**
   * Resolves once the server's side of the client's connection has closed: the event the server's timeouts
   * cause, whenever a busy machine lets them fire (no deadline of the test's own).
   */
  async function serverClosed(client: net.Socket): Promise<void> {
    while (!serverSockets.has(client.localPort!)) await new Promise((resolve) => setImmediate(resolve));
    const server = serverSockets.get(client.localPort!)!;
    if (!server.destroyed) await new Promise((resolve) => server.once('close', resolve));
  }

  return { app: () => t, port: () => port, slowClient, serverClosed };
}

describe('slow clients are cut off at the configured timeouts', () => {
  const server = serverWithTimeouts({
    CALLGATE_HEADERS_TIMEOUT_MS: '500',
    CALLGATE_REQUEST_TIMEOUT_MS: '1000',
    // The health checks below keep one connection for all of them, however long a busy machine pauses.
    CALLGATE_KEEP_ALIVE_TIMEOUT_MS: '600000',
  });
  const { slowClient, serverClosed } = server;

  /**
   * GET /healthz over the agent's one kept-alive connection: its status and the connection's local port. A new
   * connection is timed from the moment the server accepts it (a client that connects and sends nothing gets
   * its 408 too), so on a machine busy enough to hold the event loop past the headers timeout before the
   * request is read, a fast client on a new connection got a 408 as well; a kept-alive connection is timed
   * only while a request is being read, which is never across a pause.
   */
  const healthz = (agent: http.Agent) =>
    new Promise<{ status: number; localPort: number }>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port: server.port(), path: '/healthz', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, localPort: req.socket!.localPort! }));
      });
      req.on('error', reject);
    });

  it('50 header-trickle, 50 body-trickle and 20 silent connections are all closed, with a JSON 408, while /healthz is served', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const healthChecks = [await healthz(agent)];
    const headerTricklers = await Promise.all(
      Array.from({ length: 50 }, () => slowClient('GET /healthz HTTP/1.1\r\nHost: x\r\n', 'X-Slow: 1\r\n')),
    );
    const bodyTricklers = await Promise.all(
      Array.from({ length: 50 }, () =>
        slowClient(
          `POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.app().seed.token}\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{`,
          ' ',
        ),
      ),
    );
    const silent = await Promise.all(Array.from({ length: 20 }, () => slowClient('', null)));
    try {
      const closed = Promise.all([...headerTricklers, ...bodyTricklers, ...silent].map(({ socket }) => serverClosed(socket)));
      let settled = false;
      void closed.finally(() => (settled = true));

      // Meanwhile, until they are all closed, the health check is answered, each time.
      while (healthChecks.length < 10 || !settled) {
        healthChecks.push(await healthz(agent));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.deepEqual(
        healthChecks.map((check) => check.status),
        healthChecks.map(() => 200),
      );
      assert.equal(new Set(healthChecks.map((check) => check.localPort)).size, 1, 'every health check went over one connection');

      await closed;
      for (const { received } of [headerTricklers[0]!, bodyTricklers[0]!, silent[0]!]) {
        const res = parseResponse(received());
        assertJsonError(res, 408, 'request_timeout');
        assert.equal(res.headers.connection, 'close');
      }
    } finally {
      // Whatever happened, this test leaves no client trickling.
      for (const client of [...headerTricklers, ...bodyTricklers, ...silent]) client.socket.destroy();
      agent.destroy();
    }
  });

  it('a request sent at once is served as usual', async () => {
    const res = await fetch(`http://127.0.0.1:${server.port()}/v1/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.app().seed.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: server.app().seed.agentId, to: '+14155550123' }),
    });
    assert.equal(res.status, 201);
  });
});

describe('idle keep-alive connections are closed', () => {
  const { slowClient, serverClosed } = serverWithTimeouts({ CALLGATE_KEEP_ALIVE_TIMEOUT_MS: '500' });

  it('an idle keep-alive connection is closed after CALLGATE_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const client = await slowClient('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', null);
    try {
      await serverClosed(client.socket);
      assert.equal(parseResponse(client.received()).status, 200);
    } finally {
      client.socket.destroy();
    }
  });
});

describe('Strict-Transport-Security', () => {
  const requests = [
    { method: 'GET', url: '/healthz' },
    { method: 'GET', url: '/v1/calls' },
    { method: 'GET', url: '/v1/nowhere' },
    { method: 'GET', url: '/v1/calls/%zz' },
    { method: 'GET', url: '/developers/sign-in' },
    { method: 'GET', url: '/developers' },
    { method: 'GET', url: '/developers/calls/%zz' },
  ] as const;

  async function headersWith(env: Record<string, string>): Promise<Array<string | undefined>> {
    const t = await startTestApp('sqlite', { env });
    try {
      const values: Array<string | undefined> = [];
      for (const request of requests) {
        const res = await t.inject({ ...request, headers: { authorization: `Bearer ${t.seed.token}` } });
        assert.ok(res.statusCode < 500, `${request.url}: ${res.statusCode}`);
        values.push(res.headers['strict-transport-security'] as string | undefined);
      }
      return values;
    } finally {
      await t.close();
    }
  }

  it('is sent on every response of the API and the portal when CALLGATE_PUBLIC_URL is https', async () => {
    assert.deepEqual(
      await headersWith({ CALLGATE_PUBLIC_URL: 'https://callgate.example.com' }),
      requests.map(() => 'max-age=31536000'),
    );
    assert.deepEqual(
      await headersWith({ CALLGATE_PUBLIC_URL: 'https://callgate.example.com', CALLGATE_HSTS_MAX_AGE: '600' }),
      requests.map(() => 'max-age=600'),
    );
  });

  it('is not sent over http, nor with CALLGATE_HSTS_MAX_AGE=0', async () => {
    assert.deepEqual(
      await headersWith({ CALLGATE_PUBLIC_URL: 'http://127.0.0.1:3000' }),
      requests.map(() => undefined),
    );
    assert.deepEqual(
      await headersWith({ CALLGATE_PUBLIC_URL: 'https://callgate.example.com', CALLGATE_HSTS_MAX_AGE: '0' }),
      requests.map(() => undefined),
    );
  });
});
