/**
 * The example receivers of docs/webhooks.md (examples/webhooks/) run as child processes against real signed
 * deliveries from the app, and must refuse forged ones. Node and Python (by hand, and with the callgate
 * Python client of clients/python) always run; Go, PHP and Ruby run where their runtime is on PATH and
 * are skipped with the reason where it is not. The document's own signature example and payload examples
 * are checked against what callgate sends. SQLite only: the database does not change what is signed.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createEndpoint, getEndpoint, rotateSecret } from '../../src/features/webhook-endpoints/endpoints.service.js';
import { generateWebhookSecret, signedHeaders, signPayload } from '../../src/features/webhook-endpoints/webhook-signing.js';
import { startTestApp, type SeededAccount, type TestApp } from '../support/test-app.js';

const repoDir = fileURLToPath(new URL('../../', import.meta.url));
const examplesDir = path.join(repoDir, 'examples', 'webhooks');
const buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'callgate-receivers-'));

interface Command {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
}

interface Example {
  readonly name: string;
  /** The program that must be on PATH; null for this Node itself. */
  readonly runtime: string | null;
  /** A required example fails when its runtime is missing; the others are skipped. */
  readonly required: boolean;
  /** Builds if needed, then says how to start the receiver on `port`. */
  prepare(port: number): Command;
}

const examples: readonly Example[] = [
  {
    name: 'Node with standardwebhooks',
    runtime: null,
    required: true,
    prepare: () => ({ file: process.execPath, args: ['node-standardwebhooks.mjs'] }),
  },
  { name: 'Node with node:crypto', runtime: null, required: true, prepare: () => ({ file: process.execPath, args: ['node-crypto.mjs'] }) },
  { name: 'Python', runtime: 'python3', required: true, prepare: () => ({ file: 'python3', args: ['python/receiver.py'] }) },
  {
    name: 'Python with the callgate client',
    runtime: 'python3',
    required: true,
    // The client from this checkout, as `pip install ./clients/python` would provide it.
    prepare: () => ({
      file: 'python3',
      args: ['python/receiver_client.py'],
      env: { PYTHONPATH: path.join(repoDir, 'clients', 'python', 'src'), PYTHONDONTWRITEBYTECODE: '1' },
    }),
  },
  {
    name: 'Go',
    runtime: 'go',
    required: false,
    prepare() {
      // Built once into a temporary folder: `go run` would compile again at every start.
      const binary = path.join(buildDir, 'go-receiver');
      const built = spawnSync('go', ['build', '-o', binary, '.'], {
        cwd: path.join(examplesDir, 'go'),
        env: { ...process.env, GOTOOLCHAIN: 'local' },
        encoding: 'utf8',
      });
      assert.equal(built.status, 0, `go build failed:\n${built.stderr}`);
      return { file: binary, args: [] };
    },
  },
  {
    name: 'PHP',
    runtime: 'php',
    required: false,
    prepare: (port) => ({ file: 'php', args: ['-S', `127.0.0.1:${port}`, 'receiver.php'], cwd: path.join(examplesDir, 'php') }),
  },
  { name: 'Ruby', runtime: 'ruby', required: false, prepare: () => ({ file: 'ruby', args: ['ruby/receiver.rb'] }) },
];

function onPath(program: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, program), fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const receiverUrl = (port: number) => `http://127.0.0.1:${port}/webhooks/callgate`;

interface ReceiverLine {
  verified: boolean;
  id?: string;
  type?: string;
  error?: string;
}

/** One printed line; anything but one JSON object is a failure that quotes the line. */
function parseLine(line: string): ReceiverLine {
  try {
    return JSON.parse(line) as ReceiverLine;
  } catch {
    return { verified: false, error: `not one JSON object per line: ${line}` };
  }
}

/** A running example and the JSON lines it printed; its other output is kept for failure messages. */
class ReceiverProcess {
  readonly lines: ReceiverLine[] = [];
  private output = '';
  private partial = '';
  private exited = false;
  private readonly child: ChildProcess;

  constructor(command: Command, port: number, secret: string) {
    this.child = spawn(command.file, command.args, {
      cwd: command.cwd ?? examplesDir,
      env: { ...process.env, ...command.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.output += chunk;
      const parts = (this.partial + chunk).split('\n');
      this.partial = parts.pop() ?? '';
      for (const line of parts.map((part) => part.trim()).filter((part) => part.startsWith('{'))) this.lines.push(parseLine(line));
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    this.child.on('exit', () => (this.exited = true));
  }

  /** Resolves once `port` takes connections. A bare connection is no request: nothing may be printed for it. */
  async ready(port: number, timeoutMs = 10_000): Promise<void> {
    for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) {
      if (this.exited) throw new Error(`the receiver exited at start:\n${this.output}`);
      const connected = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1');
        socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
        socket.once('connect', () => socket.end());
      });
      if (connected) return;
    }
    throw new Error(`the receiver did not listen on ${port} within ${timeoutMs} ms:\n${this.output}`);
  }

  /** The line printed at `index` (0 = first), waiting for it. */
  async line(index: number, timeoutMs = 10_000): Promise<ReceiverLine> {
    for (const deadline = Date.now() + timeoutMs; this.lines.length <= index; await sleep(20)) {
      if (Date.now() > deadline) {
        throw new Error(`the receiver printed ${this.lines.length} JSON lines, not ${index + 1}, within ${timeoutMs} ms:\n${this.output}`);
      }
    }
    return this.lines[index]!;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    await Promise.race([exited, sleep(3_000).then(() => this.child.kill('SIGKILL'))]);
  }
}

/** The delivery of `eventId` to the endpoint once it has left `pending` (results are written in batches). */
async function settledDelivery(t: TestApp, endpointId: string, eventId: string, timeoutMs = 5_000) {
  for (const deadline = Date.now() + timeoutMs; ; await sleep(20)) {
    const delivery = await t.services.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', eventId)
      .executeTakeFirst();
    if (delivery && delivery.status !== 'pending') return delivery;
    if (Date.now() > deadline) throw new Error(`delivery of ${eventId} still ${delivery?.status ?? 'missing'} after ${timeoutMs} ms`);
  }
}

/** POSTs as callgate would, but with whatever body and headers the test chooses; returns the status. */
async function post(url: string, body: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  await response.arrayBuffer();
  return response.status;
}

let t: TestApp;

before(async () => {
  t = await startTestApp('sqlite', { startWorker: true, env: { CALLGATE_SIMULATOR_DELAY_MS: '30' } });
});
after(async () => {
  await t.close();
  fs.rmSync(buildDir, { recursive: true, force: true });
});

for (const example of examples) {
  const missing = example.runtime === null || onPath(example.runtime) ? null : `${example.runtime} is not on PATH`;
  const skip = missing && !example.required ? `${missing}; install it to run the ${example.name} example` : false;

  describe(`webhook receiver example: ${example.name}`, { skip }, () => {
    let account: SeededAccount;
    let receiver: ReceiverProcess;
    let url: string;
    let endpointId: string;
    let secret: string;
    const call = (to: string) => t.createCall({ agent_id: account.agentId, to }, { token: account.token });

    before(
      async () => {
        if (missing) throw new Error(`${missing}, and the ${example.name} example must run`);
        // An account of its own, so that this receiver gets this account's events only.
        account = await t.newAccount({ agentId: 'agent_receiver_example' });
        const port = await freePort();
        url = receiverUrl(port);
        const endpoint = await createEndpoint(t.services.db, t.services.clock, true, { accountId: account.accountId, url });
        endpointId = endpoint.id;
        secret = endpoint.secret;
        receiver = new ReceiverProcess(example.prepare(port), port, secret);
        await receiver.ready(port);
      },
      { timeout: 180_000 }, // a first `go build` compiles net/http
    );
    after(async () => {
      await receiver?.stop();
    });

    it('verifies the real call.completed and call.failed deliveries, which end succeeded', async () => {
      assert.equal((await call('+14155550123')).statusCode, 201);
      assert.equal((await call('+15005550001')).statusCode, 201); // the simulator's busy number
      const lines = [await receiver.line(0), await receiver.line(1)];
      assert.ok(
        lines.every((line) => line.verified === true),
        `the receiver refused a real delivery: ${JSON.stringify(lines)}`,
      );
      assert.deepEqual(lines.map((line) => line.type).sort(), ['call.completed', 'call.failed']);
      for (const line of lines) {
        assert.match(line.id ?? '', /^evt_/);
        const delivery = await settledDelivery(t, endpointId, line.id!);
        assert.equal(delivery.status, 'succeeded');
        assert.equal(delivery.attempt_count, 1);
      }
    });

    it('keeps verifying during a secret rotation, when two signatures are sent', async () => {
      // The receiver keeps the old secret; deliveries are now signed with the new one, then the old one.
      await rotateSecret(t.services.db, t.services.clock, (await getEndpoint(t.services.db, endpointId))!);
      const index = receiver.lines.length;
      await call('+14155550123');
      const line = await receiver.line(index);
      assert.equal(line.verified, true, `the receiver refused a rotated delivery: ${JSON.stringify(line)}`);
      assert.equal((await settledDelivery(t, endpointId, line.id!)).status, 'succeeded');
    });

    it('refuses a changed body, a wrong secret, a timestamp 10 minutes off and a missing signature with 4xx', async () => {
      const eventId = 'evt_01jreceiverexampletest0001';
      const data = { id: 'call_conv_example', agent_id: account.agentId, status: 'completed', duration_seconds: 42 };
      const body = JSON.stringify({ id: eventId, type: 'call.completed', created_at: new Date().toISOString(), data });
      const now = Math.floor(Date.now() / 1000);
      const signed = (secrets: string[], timestamp: number): Record<string, string> => ({
        ...signedHeaders(secrets, eventId, timestamp, body),
      });
      const forgeries: [what: string, body: string, headers: Record<string, string>][] = [
        ['a changed body', body.replace('"duration_seconds":42', '"duration_seconds":4200'), signed([secret], now)],
        ['a wrong secret', body, signed([generateWebhookSecret()], now)],
        ['a timestamp 10 minutes old', body, signed([secret], now - 600)],
        ['a timestamp 10 minutes ahead', body, signed([secret], now + 600)],
        ['no signature', body, { 'webhook-id': eventId, 'webhook-timestamp': String(now) }],
      ];
      for (const [what, sentBody, headers] of forgeries) {
        const index = receiver.lines.length;
        const status = await post(url, sentBody, headers);
        assert.ok(status >= 400 && status < 500, `${what}: answered ${status}, expected 4xx`);
        const line = await receiver.line(index);
        assert.equal(line.verified, false, `${what}: printed ${JSON.stringify(line)}`);
      }
      // The same request correctly signed is accepted: the refusals were for the forgeries alone.
      const index = receiver.lines.length;
      const status = await post(url, body, signed([secret], now));
      assert.ok(status >= 200 && status < 300, `a correct signature: answered ${status}`);
      const { verified, id, type } = await receiver.line(index);
      assert.deepEqual({ verified, id, type }, { verified: true, id: eventId, type: 'call.completed' });
    });
  });
}

describe('docs/webhooks.md', () => {
  const doc = fs.readFileSync(path.join(repoDir, 'docs', 'webhooks.md'), 'utf8');

  it('its signature example is what callgate signs', () => {
    const block = /```text\n(secret:[^`]*)```/.exec(doc)?.[1] ?? '';
    const field = (name: string) => new RegExp(`^${name}:\\s+(.+)$`, 'm').exec(block)?.[1] ?? `(no ${name} in the example)`;
    const expected = signPayload(field('secret'), field('webhook-id'), Number(field('webhook-timestamp')), field('body'));
    assert.equal(field('webhook-signature'), expected);
  });

  it('its call.completed and call.failed examples have the fields callgate sends', async () => {
    const examplesInDoc = [...doc.matchAll(/```json\n([^`]*)```/g)].map((match) => JSON.parse(match[1]!) as { type: string; data: object });
    const account = await t.newAccount({ agentId: 'agent_doc_check' });
    for (const [type, to] of [
      ['call.completed', '+14155550123'],
      ['call.failed', '+15005550002'],
    ] as const) {
      const created = (await t.createCall({ agent_id: account.agentId, to }, { token: account.token })).json<{ id: string }>();
      let event;
      for (const deadline = Date.now() + 5_000; !event && Date.now() < deadline; await sleep(20)) {
        event = await t.services.db.selectFrom('webhook_events').selectAll().where('call_id', '=', created.id).executeTakeFirst();
      }
      assert.ok(event, `no event for ${created.id}`);
      const sent = JSON.parse(event.payload) as { type: string; data: object };
      const documented = examplesInDoc.find((example) => example.type === type);
      assert.ok(documented, `docs/webhooks.md has no ${type} example`);
      assert.equal(sent.type, type);
      assert.deepEqual(Object.keys(documented.data).sort(), Object.keys(sent.data).sort());
      assert.deepEqual(Object.keys(documented).sort(), Object.keys(sent).sort());
    }
  });
});
