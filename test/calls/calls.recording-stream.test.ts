/**
 * A recording goes from the provider to the client as a stream, over real HTTP on both sides: 20 clients
 * reading a 50 MB recording at once get every byte, while the server's memory stays flat; clients that stop
 * reading stop the provider's side too (backpressure end to end), and a client that goes away frees the
 * provider's connection; neither the recording's URL nor the provider's key shows in an answer or a log
 * line. The recording is a Retell URL served by a local stand-in for their storage.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import { recordOutcome } from '../../src/features/calls/calls.service.js';
import { newCallRow } from '../../src/features/calls/call-row.js';
import { forEachDialect } from '../support/dialects.js';
import { listenOnFreePort } from '../support/http-client.js';
import { memoryLogs } from '../support/memory-logs.js';
import { startTestApp, type TestApp } from '../support/test-app.js';
import { until } from '../support/wait.js';

const recordingBytes = 50 * 1024 * 1024;
const clients = 20;
const chunk = Buffer.alloc(64 * 1024, 0x55);

/** Retell's storage, as far as a recording goes: streams `recordingBytes` to each GET, as fast as it is read. */
async function startRecordingHost() {
  const state = { sent: 0, open: 0, closedEarly: 0 };
  const server = http.createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(recordingBytes) });
    state.open += 1;
    let left = recordingBytes;
    const pump = () => {
      while (left > 0) {
        const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
        left -= piece.length;
        state.sent += piece.length;
        if (!response.write(piece)) return void response.once('drain', pump);
      }
      response.end();
    };
    response.on('close', () => {
      state.open -= 1;
      if (left > 0) state.closedEarly += 1;
    });
    pump();
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

await forEachDialect('Streaming a recording', (dialect) => {
  let t: TestApp;
  let host: Awaited<ReturnType<typeof startRecordingHost>>;
  let baseUrl: string;
  let callId: string;
  const logs = memoryLogs();
  before(async () => {
    host = await startRecordingHost();
    // The host stands at Retell's API origin here, so its plain-http URL is fetched (an https URL elsewhere would be too).
    t = await startTestApp(dialect, {
      env: { RETELL_API_KEY: 'key_retell_stream', RETELL_BASE_URL: host.url },
      overrides: { logger: logs.logger },
    });
    baseUrl = await listenOnFreePort(t.app);
    const now = new Date();
    const row = newCallRow({
      conversationId: 'call_retell_stream1',
      origin: {
        account_id: t.seed.accountId,
        api_key_id: t.seed.keyId,
        agent_id: t.seed.agentId,
        agent_ref: (await t.services.db.selectFrom('agents').select('id').where('agent_id', '=', t.seed.agentId).executeTakeFirstOrThrow())
          .id,
        mode: 'live',
        provider: 'retell',
        to_number: '+14155550123',
        metadata: null,
        batch_id: null,
        reference: null,
      },
      dialId: 'dial_stream',
      createdAt: now.toISOString(),
      now,
      firstCheckAt: new Date(now.getTime() + 3_600_000),
      foundAfterLostAnswer: false,
    });
    await t.services.db.insertInto('calls').values(row).execute();
    callId = row.id;
    await recordOutcome(t.services.db, t.services.clock, callId, {
      status: 'completed',
      startedAt: new Date(now.getTime() - 60_000),
      endedAt: now,
      durationSeconds: 60,
      transcriptSummary: '',
      content: { analysis: null, turns: null, recording: { kind: 'url', url: `${host.url}/recordings/${callId}.wav` } },
    });
  });
  after(async () => {
    await t.close();
    await host.close();
  });

  /** A GET of the recording whose body is counted and dropped; `paused` holds it after its first megabyte. */
  function download(paused: boolean) {
    const state = { received: 0, status: 0, type: '', length: '', held: false, response: undefined as http.IncomingMessage | undefined };
    const finished = new Promise<void>((resolve, reject) => {
      const request = http.get(
        `${baseUrl}/v1/calls/${callId}/recording`,
        { headers: { authorization: `Bearer ${t.seed.token}` } },
        (response) => {
          state.response = response;
          state.status = response.statusCode ?? 0;
          state.type = String(response.headers['content-type']);
          state.length = String(response.headers['content-length']);
          response.on('data', (piece: Buffer) => {
            state.received += piece.length;
            if (paused && !state.held && state.received >= 1024 * 1024) {
              state.held = true;
              response.pause();
            }
          });
          response.on('end', () => resolve());
          response.on('error', reject);
        },
      );
      request.on('error', reject);
    });
    return { state, finished };
  }

  it(`${clients} clients stream a ${recordingBytes / 1024 / 1024} MB recording at once: every byte arrives, memory stays flat, and readers that stop hold the provider back`, async (context) => {
    globalThis.gc?.();
    const baseline = process.memoryUsage();
    let peakRss = baseline.rss;
    let peakBuffers = baseline.arrayBuffers;
    const sampler = setInterval(() => {
      const now = process.memoryUsage();
      peakRss = Math.max(peakRss, now.rss);
      peakBuffers = Math.max(peakBuffers, now.arrayBuffers);
    }, 20);
    try {
      const downloads = Array.from({ length: clients }, () => download(true));
      // Every client holds after its first megabyte; then the provider's side must stop too.
      await until('every client to hold after its first megabyte', () =>
        downloads.every(({ state }) => state.response?.isPaused()) ? true : undefined,
      );
      let last = -1;
      const held = await until('the provider to stop sending to readers that stopped', async () => {
        const sent = host.state.sent;
        if (sent === last) return sent;
        last = sent;
        await new Promise((resolve) => setTimeout(resolve, 100));
        return undefined;
      });
      // What stands between a paused reader and the provider is socket buffers (the kernel's, some MB per
      // hop on loopback) and a stream's high-water mark; without backpressure the provider would send it all.
      const perClient = held / clients;
      assert.ok(perClient < recordingBytes / 2, `the provider sent ${Math.round(perClient / 1024)} KB per paused reader: no backpressure`);
      for (const { state } of downloads) state.response!.resume();
      await Promise.all(downloads.map(({ finished }) => finished));
      for (const { state } of downloads) {
        assert.equal(state.status, 200);
        assert.equal(state.type, 'audio/wav');
        assert.equal(state.length, String(recordingBytes));
        assert.equal(state.received, recordingBytes);
      }
    } finally {
      clearInterval(sampler);
    }
    const grownMb = (peakRss - baseline.rss) / 1024 / 1024;
    const buffersMb = (peakBuffers - baseline.arrayBuffers) / 1024 / 1024;
    // Buffered whole, the 20 recordings would take 1,000 MB.
    context.diagnostic(
      `rss grew by at most ${grownMb.toFixed(1)} MB, buffers by ${buffersMb.toFixed(1)} MB, for ${clients} x ${recordingBytes / 1024 / 1024} MB streamed`,
    );
    assert.ok(grownMb < 150, `rss grew by ${grownMb.toFixed(1)} MB`);
    assert.ok(buffersMb < 100, `buffers grew by ${buffersMb.toFixed(1)} MB`);
  });

  it("no answer and no log line shows the recording's URL, its host or the provider's key", async () => {
    const answer = await t.inject({ method: 'GET', url: `/v1/calls/${callId}`, headers: { authorization: `Bearer ${t.seed.token}` } });
    const missing = await t.inject({
      method: 'GET',
      url: '/v1/calls/call_unknown/recording',
      headers: { authorization: `Bearer ${t.seed.token}` },
    });
    assert.ok(logs.lines.length > 0, 'the requests were logged');
    for (const text of [answer.body, missing.body, logs.text()]) {
      for (const secret of [host.url.replace('http://', ''), '/recordings/', 'key_retell_stream'])
        assert.ok(!text.includes(secret), secret);
    }
  });

  it("a client that goes away mid-recording frees the provider's connection", async () => {
    const closedBefore = host.state.closedEarly;
    const { state } = download(true);
    await until('the client to hold after its first megabyte', () => (state.response?.isPaused() ? true : undefined));
    state.response!.destroy();
    await until('the provider connection to close', () =>
      host.state.closedEarly > closedBefore && host.state.open === 0 ? true : undefined,
    );
  });
});
