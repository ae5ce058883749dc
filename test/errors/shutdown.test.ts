/**
 * A request that arrives while the server closes (on a connection kept alive across the shutdown) is
 * answered in the catalogue's shape: 503 `service_unavailable` with request_id, X-Request-Id,
 * `Connection: close` and `Retry-After`, not Fastify's own 503 body.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { callBody, startTestApp } from '../support/test-app.js';
import { createFakeProvider, untilAttempts } from '../support/fake-voice-provider.js';
import { listenOnFreePort } from '../support/http-client.js';

interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** Splits what a keep-alive connection received into its responses (each with a Content-Length). */
function parseResponses(raw: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headEnd = rest.indexOf('\r\n\r\n');
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = headEnd + 4;
    responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(bodyStart, bodyStart + length) });
    rest = rest.slice(bodyStart + length);
  }
  return responses;
}

it('answers a request that arrives while the server closes with 503 service_unavailable in the catalogue shape', async () => {
  const fake = createFakeProvider();
  let letGo!: () => void;
  fake.steps = [{ until: new Promise<void>((resolve) => (letGo = resolve)) }];
  const t = await startTestApp('sqlite', { overrides: { providers: createProviderRegistry({ simulator: fake }) } });
  try {
    const url = new URL(await listenOnFreePort(t.app));
    const socket = net.connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    const body = JSON.stringify(callBody(t));
    socket.write(
      `POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.seed.token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // The first request is under way (the provider holds it), so close() waits for it.
    await untilAttempts(fake, 1);
    const closing = t.app.close();
    const deadline = Date.now() + 10_000;
    while (t.app.server.listening) {
      if (Date.now() > deadline) throw new Error('the server did not stop listening');
      await sleep(5);
    }
    // A second request on the same kept-alive connection arrives while the server closes.
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    letGo();
    await closing;
    await ended;

    const [first, second] = parseResponses(received);
    assert.equal(first?.status, 201, received);
    assert.ok(second, `no answer to the request sent while closing:\n${received}`);
    assert.equal(second.status, 503);
    const error = JSON.parse(second.body) as { error: string; message: string; request_id: string };
    assert.equal(error.error, 'service_unavailable');
    assert.match(error.message, /shutting down/);
    assert.match(error.request_id, /^req_/);
    assert.equal(second.headers['x-request-id'], error.request_id);
    assert.equal(second.headers.connection, 'close');
    assert.equal(second.headers['retry-after'], '1');
    assert.match(second.headers['content-type'] ?? '', /^application\/json/);
  } finally {
    letGo();
    await t.services.close();
    await t.database.drop();
  }
});
