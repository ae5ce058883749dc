/**
 * Shutdown and a client that hung up: closing the HTTP server does not wait for a handler whose connection
 * is gone, so the app counts running handlers and shutdown waits for them before the database closes.
 * Otherwise a call the provider placed for that client would never be stored.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { it } from 'node:test';
import { createProviderRegistry } from '../../src/features/providers/provider-registry.js';
import { forEachDialect } from '../support/dialects.js';
import { callBody, countCalls, startTestApp } from '../support/test-app.js';
import { createFakeProvider, untilAttempts } from '../support/fake-voice-provider.js';

await forEachDialect('Handlers still running at shutdown', (dialect) => {
  it('a call placed for a client that hung up is stored before shutdown may close the database', async () => {
    const fake = createFakeProvider();
    let release!: () => void;
    fake.defaultStep = { until: new Promise<void>((resolve) => (release = resolve)) };
    const t = await startTestApp(dialect, { overrides: { providers: createProviderRegistry({ simulator: fake }) } });
    try {
      const { port } = new URL(await t.app.listen({ port: 0, host: '127.0.0.1' }));
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.on('error', () => undefined);
      await once(socket, 'connect');
      const body = JSON.stringify(callBody(t));
      socket.write(
        `POST /v1/calls HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.seed.token}\r\nContent-Type: application/json\r\n` +
          `Idempotency-Key: hung-up\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await untilAttempts(fake, 1);
      socket.destroy();
      // The server closes without waiting for the handler: its client is gone.
      await t.app.close();
      assert.equal(await t.app.inFlight.idle(0), false, 'the handler is still running');
      assert.equal(await countCalls(t.services), 0);
      release();
      assert.equal(await t.app.inFlight.idle(10_000), true);
      assert.equal(await countCalls(t.services), 1, 'the placed call is stored');
      const key = await t.services.db
        .selectFrom('idempotency_keys')
        .select('state')
        .where('idempotency_key', '=', 'hung-up')
        .executeTakeFirst();
      assert.equal(key?.state, 'completed');
    } finally {
      release();
      await t.close();
    }
  });
});
