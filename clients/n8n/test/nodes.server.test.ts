/**
 * The n8n nodes against a real callgate on a real port, on SQLite and PostgreSQL, through a hand-made `this`
 * with the few members of n8n's function contexts the nodes use, whose httpRequestWithAuthentication does
 * real HTTP with the credentials' own `authenticate`:
 * - Callgate: a create run twice in one execution (Retry On Fail) places each item's call once, a new
 *   execution places anew unless the user's key is mapped, reads, lists, transcripts, batches, agents.
 * - Callgate Trigger: checkExists / create / delete of its endpoint, stale and changed ones, test URLs.
 * - Deliveries: a small HTTP server hands each real delivery to the trigger's webhook(), as n8n does; a good
 *   one starts the workflow with the event, a tampered, stale or wrongly keyed one is answered 401.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, it } from 'node:test';
import type { IDataObject, IHttpRequestOptions, INodeExecutionData, IWebhookResponseData } from 'n8n-workflow';
import { forEachDialect } from '../../../test/support/dialects.js';
import { listenOnFreePort, postCall } from '../../../test/support/http-client.js';
import { type SeededAccount, startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { until } from '../../../test/support/wait.js';
import { CallgateApi } from '../credentials/CallgateApi.credentials.js';
import { Callgate } from '../nodes/Callgate/Callgate.node.js';
import { CallgateTrigger } from '../nodes/CallgateTrigger/CallgateTrigger.node.js';
import { sign } from '../shared/signature.js';

type Parameters = Record<string, unknown>;

/** n8n's httpRequestWithAuthentication, with fetch: the credentials' authenticate headers, JSON both ways. */
function httpWithCredentials(credentials: { baseUrl: string; apiKey: string }, calls: IHttpRequestOptions[]) {
  const { headers: authHeaders = {} } = new CallgateApi().authenticate.properties;
  const resolve = (template: unknown) =>
    String(template)
      .replace(/^=/, '')
      .replace(/\{\{\s*\$credentials\.(\w+)\s*\}\}/g, (_, name: string) => String((credentials as Record<string, string>)[name]));
  return async (credentialsType: string, options: IHttpRequestOptions) => {
    assert.equal(credentialsType, 'callgateApi');
    calls.push(options);
    const url = new URL(`${String(options.baseURL).replace(/\/+$/, '')}/${options.url.replace(/^\/+/, '')}`);
    for (const [name, value] of Object.entries(options.qs ?? {})) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries({ ...options.headers, ...authHeaders })) headers[name] = resolve(value);
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(url, {
      method: options.method ?? 'GET',
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
    });
    const text = await response.text();
    const body = text === '' ? '' : (JSON.parse(text) as unknown);
    if (!options.ignoreHttpStatusErrors && !response.ok) throw new Error(`HTTP ${response.status}`);
    return options.returnFullResponse ? { statusCode: response.status, headers: Object.fromEntries(response.headers), body } : body;
  };
}

interface Harness {
  /** A `this` for execute(), loadOptions, the hook methods and webhook(). */
  context(options?: { parameters?: Parameters; items?: number; executionId?: string; request?: unknown; response?: unknown }): never;
  readonly staticData: IDataObject;
  readonly requests: IHttpRequestOptions[];
  webhookUrl: string;
}

function harness(
  baseUrl: string,
  account: SeededAccount,
  base: Parameters = {},
  webhookUrl = 'https://n8n.example.com/webhook/x/webhook',
): Harness {
  const requests: IHttpRequestOptions[] = [];
  const staticData: IDataObject = {};
  const node = { id: randomUUID(), name: 'Callgate', type: 'callgate', typeVersion: 1, position: [0, 0], parameters: {} };
  const h: Harness = {
    staticData,
    requests,
    webhookUrl,
    context(options = {}) {
      const parameters = { ...base, ...options.parameters };
      const httpRequestWithAuthentication = httpWithCredentials({ baseUrl, apiKey: account.token }, requests);
      return {
        getCredentials: async () => ({ baseUrl, apiKey: account.token }),
        getNodeParameter: (name: string, _item?: number, fallback?: unknown) => {
          if (name in parameters) return parameters[name];
          if (fallback !== undefined) return fallback;
          throw new Error(`no parameter ${name}`);
        },
        getNode: () => node,
        getWorkflow: () => ({ id: 'wf-1', name: 'CRM sync', active: true }),
        getExecutionId: () => options.executionId ?? '1',
        getInstanceId: () => 'instance-1',
        getInputData: () => Array.from({ length: options.items ?? 1 }, () => ({ json: {} })),
        continueOnFail: () => false,
        getWorkflowStaticData: () => staticData,
        getNodeWebhookUrl: () => h.webhookUrl,
        getRequestObject: () => options.request,
        getResponseObject: () => options.response,
        logger: { warn() {}, info() {}, debug() {}, error() {} },
        helpers: { httpRequestWithAuthentication },
      } as never;
    },
  };
  return h;
}

async function api(
  baseUrl: string,
  token: string,
  method: string,
  path: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${baseUrl}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

const jsonOf = (output: INodeExecutionData[][]) => (output[0] ?? []).map((item) => item.json);

await forEachDialect('n8n Callgate node against callgate', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const node = new Callgate();
  before(async () => {
    t = await startTestApp(dialect, { startWorker: true });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('create: two items, run twice in one execution (Retry On Fail), place two calls; a new execution places anew', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_create' });
    const h = harness(baseUrl, account, { resource: 'call', operation: 'create', agentId: account.agentId, to: '+14155550123' });
    const first = jsonOf(
      await node.execute.call(h.context({ items: 2, executionId: '71', parameters: { metadata: '{"customer_name":"Ada"}' } })),
    );
    const retried = jsonOf(
      await node.execute.call(h.context({ items: 2, executionId: '71', parameters: { metadata: '{"customer_name":"Ada"}' } })),
    );
    assert.equal(first.length, 2);
    assert.deepEqual(
      retried.map((call) => call.id),
      first.map((call) => call.id),
      'the retry gets the same calls back',
    );
    assert.notEqual(first[0]!.id, first[1]!.id);
    assert.deepEqual((await api(baseUrl, account.token, 'GET', `/v1/calls/${first[0]!.id}`)).body.metadata, { customer_name: 'Ada' });
    assert.equal(first[0]!.livemode, false);
    const keys = h.requests.map((request) => (request.headers as Record<string, string>)['Idempotency-Key']);
    assert.deepEqual(keys.slice(2), keys.slice(0, 2));
    const anew = jsonOf(
      await node.execute.call(h.context({ items: 2, executionId: '72', parameters: { metadata: '{"customer_name":"Ada"}' } })),
    );
    assert.ok(anew.every((call) => !first.some((earlier) => earlier.id === call.id)));
    const listed = await api(baseUrl, account.token, 'GET', '/v1/calls?limit=100');
    assert.equal((listed.body.data as unknown[]).length, 4);
  });

  it("create with the user's key: a new execution of the same item gets the same call", async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_userkey' });
    const h = harness(baseUrl, account, {
      resource: 'call',
      operation: 'create',
      agentId: account.agentId,
      to: '+14155550124',
      idempotencyKey: 'order-881',
    });
    const first = jsonOf(await node.execute.call(h.context({ executionId: '80' })));
    const second = jsonOf(await node.execute.call(h.context({ executionId: '81' })));
    assert.equal(second[0]!.id, first[0]!.id);
    assert.deepEqual(
      h.requests.map((request) => (request.headers as Record<string, string>)['Idempotency-Key']),
      ['order-881', 'order-881'],
    );
  });

  it("refusals are callgate's code and message; bad metadata fails before any request", async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_refusals' });
    const h = harness(baseUrl, account, { resource: 'call', operation: 'create', agentId: 'agent_nobody', to: '+14155550123' });
    await assert.rejects(node.execute.call(h.context()), (error: Error & { httpCode?: string }) => {
      assert.match(error.message, /^callgate answered 403 agent_not_found: .*\(param: agent_id; request req_/);
      assert.equal(error.httpCode, '403');
      return true;
    });
    const before = h.requests.length;
    await assert.rejects(
      node.execute.call(h.context({ parameters: { agentId: account.agentId, metadata: '{"a": }' } })),
      /Metadata is not valid JSON .*Write it like/,
    );
    assert.equal(h.requests.length, before, 'nothing sent');
  });

  it('get, list with filters and a limit, and the transcript once the call ended', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_reads' });
    const h = harness(baseUrl, account, { resource: 'call', agentId: account.agentId });
    const made: string[] = [];
    for (const to of ['+14155550131', '+14155550132', '+14155550133']) {
      const [call] = jsonOf(await node.execute.call(h.context({ executionId: randomUUID(), parameters: { operation: 'create', to } })));
      made.push(String(call!.id));
    }
    const got = jsonOf(await node.execute.call(h.context({ parameters: { operation: 'get', callId: made[0] } })));
    assert.equal(got[0]!.to, '+14155550131');
    const two = jsonOf(await node.execute.call(h.context({ parameters: { operation: 'list', returnAll: false, limit: 2, filters: {} } })));
    assert.deepEqual(
      two.map((call) => call.id),
      made.slice(1).reverse(),
    );
    const byNumber = jsonOf(
      await node.execute.call(
        h.context({ parameters: { operation: 'list', returnAll: true, filters: { to: '+14155550132', status: '' } } }),
      ),
    );
    assert.deepEqual(
      byNumber.map((call) => call.id),
      [made[1]],
    );
    await until('the call to end', async () => {
      const call = await api(baseUrl, account.token, 'GET', `/v1/calls/${made[0]}`);
      return call.body.status === 'completed' ? true : undefined;
    });
    const [transcript] = jsonOf(await node.execute.call(h.context({ parameters: { operation: 'getTranscript', callId: made[0] } })));
    assert.equal(transcript!.call_id, made[0]);
    assert.ok(Array.isArray(transcript!.turns));
  });

  it('batch create with JSON or field recipients, get and list; the agent picker lists the agents by name', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_batch' });
    const h = harness(baseUrl, account, { resource: 'batch', agentId: account.agentId });
    const [batch] = jsonOf(
      await node.execute.call(
        h.context({
          parameters: {
            operation: 'create',
            recipientsSource: 'json',
            recipients: '[{"to": "+14155550141", "reference": "appt-1"}, {"to": "+14155550142"}]',
            batchOptions: { name: 'Reminders', maxConcurrency: 2 },
          },
        }),
      ),
    );
    assert.match(String(batch!.id), /^batch_/);
    assert.deepEqual([batch!.name, batch!.max_concurrency, (batch!.counts as IDataObject).total], ['Reminders', 2, 2]);
    const [fromFields] = jsonOf(
      await node.execute.call(
        h.context({
          executionId: '2',
          parameters: {
            operation: 'create',
            recipientsSource: 'fields',
            recipientFields: { recipient: [{ to: '+14155550143', reference: 'r-1', metadata: '{}' }] },
          },
        }),
      ),
    );
    assert.equal((fromFields!.counts as IDataObject).total, 1);
    const [got] = jsonOf(await node.execute.call(h.context({ parameters: { operation: 'get', batchId: batch!.id } })));
    assert.equal(got!.id, batch!.id);
    const listed = jsonOf(await node.execute.call(h.context({ parameters: { operation: 'list', returnAll: true, batchStatus: '' } })));
    assert.deepEqual(
      listed.map((row) => row.id),
      [fromFields!.id, batch!.id],
    );
    const agents = await node.methods.loadOptions.getAgents.call(h.context());
    assert.deepEqual(agents, [{ name: 'Reminder bot', value: account.agentId, description: `${account.agentId} (simulator)` }]);
  });
});

await forEachDialect('n8n Callgate node: cancelling a call', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const node = new Callgate();
  before(async () => {
    // Calls of a minute and no worker: the simulated call is under way when it is cancelled, and stays so.
    t = await startTestApp(dialect, { env: { CALLGATE_SIMULATOR_DELAY_MS: '60000' } });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  it('cancel posts to /v1/calls/{id}/cancel and outputs the call with cancel_requested_at; again, the same', async () => {
    const account = await t.newAccount({ mode: 'test', agentId: 'agent_n8n_cancel' });
    const created = await postCall(baseUrl, account.token, { agent_id: account.agentId, to: '+14155550140' });
    const callId = (created.body as { id: string }).id;
    const h = harness(baseUrl, account, { resource: 'call', operation: 'cancel', callId });
    const [first] = jsonOf(await node.execute.call(h.context()));
    assert.equal(first!.id, callId);
    assert.match(String(first!.cancel_requested_at), /Z$/);
    const [again] = jsonOf(await node.execute.call(h.context()));
    assert.equal(again!.cancel_requested_at, first!.cancel_requested_at);
    assert.deepEqual(
      h.requests.map((request) => `${request.method} ${request.url}`),
      [`POST /v1/calls/${callId}/cancel`, `POST /v1/calls/${callId}/cancel`],
    );
  });
});

await forEachDialect('n8n Callgate Trigger endpoint lifecycle against callgate', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const trigger = new CallgateTrigger();
  const hooks = trigger.webhookMethods.default;
  before(async () => {
    t = await startTestApp(dialect);
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());
  const url = () => `https://n8n.example.com/webhook/${randomUUID()}/webhook`;

  it('create makes a test endpoint for the URL and events and keeps its id and secret; checkExists finds it; delete removes it', async () => {
    const account = await t.newAccount({ mode: 'test' });
    const h = harness(baseUrl, account, { events: ['call.completed', 'call.failed'] }, url());
    assert.equal(await hooks.checkExists.call(h.context()), false, 'nothing stored yet');
    assert.equal(await hooks.create.call(h.context()), true);
    assert.match(String(h.staticData.webhookId), /^we_/);
    assert.match(String(h.staticData.webhookSecret), /^whsec_/);
    const creation = h.requests.find((request) => request.method === 'POST');
    assert.match(String((creation!.headers as Record<string, string>)['Idempotency-Key']), /^n8n-/);
    const endpoint = await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${h.staticData.webhookId}`);
    assert.equal(endpoint.status, 200);
    assert.equal(endpoint.body.url, h.webhookUrl);
    assert.deepEqual(endpoint.body.enabled_events, ['call.completed', 'call.failed']);
    assert.equal(endpoint.body.livemode, false, 'a test key makes a test endpoint');
    assert.equal(endpoint.body.description, 'n8n: CRM sync / Callgate');
    assert.equal(await hooks.checkExists.call(h.context()), true);
    const id = h.staticData.webhookId;
    assert.equal(await hooks.delete.call(h.context()), true);
    assert.deepEqual(h.staticData, {});
    assert.equal((await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${id}`)).status, 404);
    assert.equal(await hooks.delete.call(h.context()), true, 'nothing left to delete');
  });

  it('a live key makes a live endpoint', async () => {
    const account = await t.newAccount({ mode: 'live' });
    const h = harness(baseUrl, account, { events: ['batch.completed'] }, url());
    await hooks.create.call(h.context());
    const endpoint = await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${h.staticData.webhookId}`);
    assert.deepEqual([endpoint.body.livemode, endpoint.body.enabled_events], [true, ['batch.completed']]);
    await hooks.delete.call(h.context());
  });

  it('checkExists: an endpoint deleted elsewhere (404) is forgotten; one with other events or disabled is deleted', async () => {
    const account = await t.newAccount({ mode: 'test' });
    const h = harness(baseUrl, account, { events: ['call.completed'] }, url());
    await hooks.create.call(h.context());
    assert.equal((await api(baseUrl, account.token, 'DELETE', `/v1/webhook_endpoints/${h.staticData.webhookId}`)).status, 204);
    assert.equal(await hooks.checkExists.call(h.context()), false);
    assert.deepEqual(h.staticData, {}, 'stale data cleared');

    await hooks.create.call(h.context());
    const changed = h.staticData.webhookId;
    assert.equal(await hooks.checkExists.call(h.context({ parameters: { events: ['call.completed', 'call.failed'] } })), false);
    assert.equal((await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${changed}`)).status, 404, 'the old one is deleted');
    assert.deepEqual(h.staticData, {});

    await hooks.create.call(h.context());
    const disabled = h.staticData.webhookId;
    const patched = await fetch(`${baseUrl}/v1/webhook_endpoints/${disabled}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${account.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ disabled: true }),
    });
    assert.equal(patched.status, 200);
    assert.equal(await hooks.checkExists.call(h.context()), false);
    assert.equal((await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${disabled}`)).status, 404);
  });

  it("n8n's test URL: delete without static data finds the endpoint by its URL; create replaces leftovers of its URL", async () => {
    const account = await t.newAccount({ mode: 'test' });
    const testUrl = `https://n8n.example.com/webhook-test/${randomUUID()}/webhook`;
    const first = harness(baseUrl, account, { events: ['call.completed'] }, testUrl);
    await hooks.create.call(first.context());
    const leftover = first.staticData.webhookId;
    const again = harness(baseUrl, account, { events: ['call.completed'] }, testUrl);
    await hooks.create.call(again.context());
    assert.notEqual(again.staticData.webhookId, leftover);
    assert.equal((await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints/${leftover}`)).status, 404, 'the leftover is gone');
    const forgetful = harness(baseUrl, account, { events: ['call.completed'] }, testUrl);
    assert.equal(await hooks.delete.call(forgetful.context()), true);
    const left = await api(baseUrl, account.token, 'GET', `/v1/webhook_endpoints?url=${encodeURIComponent(testUrl)}`);
    assert.deepEqual(left.body.data, []);
  });

  it('create: a URL callgate refuses is an error that says what to do; an unknown key is 401', async () => {
    const account = await t.newAccount({ mode: 'test' });
    const h = harness(baseUrl, account, { events: ['call.completed'] }, 'ftp://n8n.example.com/webhook/x/webhook');
    await assert.rejects(hooks.create.call(h.context()), (error: Error & { description?: string }) => {
      assert.match(error.message, /callgate answered 400 invalid_request: .*param: url/);
      assert.match(String(error.description), /public https URLs.*CALLGATE_WEBHOOK_ALLOW_PRIVATE=true/);
      return true;
    });
    assert.deepEqual(h.staticData, {});
    const stranger = harness(baseUrl, { ...account, token: `cg_test_${'0'.repeat(64)}` }, { events: ['call.completed'] }, url());
    await assert.rejects(hooks.create.call(stranger.context()), /callgate answered 401 unauthorized/);
  });
});

/** What n8n's webhook handler does for this node: the request (its body unread) to webhook(), then the answer. */
function startN8nLikeServer(run: (request: unknown, response: unknown) => Promise<IWebhookResponseData>) {
  const started: IDataObject[] = [];
  const answers: { status: number; eventId: unknown; signature: unknown }[] = [];
  const server = http.createServer((req, res) => {
    const request = Object.assign(req, {
      rawBody: undefined as Buffer | undefined,
      async readRawBody() {
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        request.rawBody = Buffer.concat(chunks);
      },
    });
    const response = {
      status(code: number) {
        res.statusCode = code;
        return response;
      },
      json(body: unknown) {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(body));
      },
    };
    run(request, response).then(
      (result) => {
        for (const item of result.workflowData?.[0] ?? []) started.push(item.json);
        if (!result.noWebhookResponse) {
          res.statusCode = 200;
          res.end(JSON.stringify(result.webhookResponse ?? { message: 'Workflow was started' }));
        }
        answers.push({ status: res.statusCode, eventId: request.headers['webhook-id'], signature: request.headers['webhook-signature'] });
      },
      (error: unknown) => {
        res.statusCode = 500;
        res.end(String(error));
      },
    );
  });
  return new Promise<{ url: string; started: IDataObject[]; answers: typeof answers; close: () => Promise<void> }>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/webhook/${randomUUID()}/webhook`,
        started,
        answers,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}

await forEachDialect('n8n Callgate Trigger on real deliveries', (dialect) => {
  let t: TestApp;
  let baseUrl: string;
  const trigger = new CallgateTrigger();
  before(async () => {
    t = await startTestApp(dialect, { startWorker: true });
    baseUrl = await listenOnFreePort(t.app);
  });
  after(async () => t.close());

  /** A trigger made active for `events` on a test key, with the server n8n would be. */
  async function activeTrigger(events: string[]) {
    const account = await t.newAccount({ mode: 'test' });
    let h: Harness | undefined;
    const server = await startN8nLikeServer((request, response) => trigger.webhook.call(h!.context({ request, response })));
    h = harness(baseUrl, account, { events }, server.url);
    assert.equal(await trigger.webhookMethods.default.create.call(h.context()), true);
    return { account, h, server };
  }

  it('a real call.completed is verified and starts the workflow with the event; call.failed too', async () => {
    const { account, h, server } = await activeTrigger(['call.completed', 'call.failed']);
    try {
      const placed = await postCall(baseUrl, account.token, {
        agent_id: account.agentId,
        to: '+14155550151',
        metadata: { customer_name: 'Ada' },
      });
      assert.equal(placed.status, 201);
      const event = await until('the call.completed delivery', () =>
        server.started.find((e) => (e.data as IDataObject).id === placed.body.id),
      );
      assert.equal(event.type, 'call.completed');
      assert.equal(event.livemode, false);
      assert.deepEqual((event.data as IDataObject).metadata, { customer_name: 'Ada' });
      const busy = await postCall(baseUrl, account.token, { agent_id: account.agentId, to: '+15005550001' });
      const failed = await until('the call.failed delivery', () => server.started.find((e) => (e.data as IDataObject).id === busy.body.id));
      assert.equal(failed.type, 'call.failed');
      assert.ok(server.answers.every((answer) => answer.status === 200));
      assert.equal(server.started.length, 2);
    } finally {
      await trigger.webhookMethods.default.delete.call(h.context());
      await server.close();
    }
  });

  it('a tampered body, a wrong secret or a stale timestamp is answered 401 and starts nothing', async () => {
    // The endpoint is pointed at a recorder first, to keep one real delivery's bytes and headers.
    const recorded: { headers: http.IncomingHttpHeaders; body: Buffer }[] = [];
    const recorder = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        recorded.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
    const account = await t.newAccount({ mode: 'test' });
    const h = harness(
      baseUrl,
      account,
      { events: ['call.completed'] },
      `http://127.0.0.1:${(recorder.address() as AddressInfo).port}/webhook/r/webhook`,
    );
    try {
      await trigger.webhookMethods.default.create.call(h.context());
      const secret = String(h.staticData.webhookSecret);
      const placed = await postCall(baseUrl, account.token, { agent_id: account.agentId, to: '+14155550152' });
      const delivery = await until('a recorded delivery', () => recorded.find((r) => r.body.includes(String(placed.body.id))));

      const server = await startN8nLikeServer((request, response) => trigger.webhook.call(h.context({ request, response })));
      const send = (body: Buffer | string, headers: http.IncomingHttpHeaders) =>
        fetch(server.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': String(headers['webhook-id']),
            'webhook-timestamp': String(headers['webhook-timestamp']),
            'webhook-signature': String(headers['webhook-signature']),
          },
          body,
        });
      try {
        assert.equal((await send(delivery.body, delivery.headers)).status, 200, 'the delivery as sent verifies');
        assert.equal(server.started.length, 1);
        const tampered = Buffer.from(delivery.body.toString('utf8').replace('"completed"', '"failed"'));
        const refusal = await send(tampered, delivery.headers);
        assert.equal(refusal.status, 401);
        assert.equal(((await refusal.json()) as { error: string }).error, 'invalid_signature');
        const stale = String(Math.floor(Date.now() / 1000) - 301);
        const staleHeaders = {
          ...delivery.headers,
          'webhook-timestamp': stale,
          'webhook-signature': `v1,${sign(secret, String(delivery.headers['webhook-id']), stale, delivery.body)}`,
        };
        assert.equal((await send(delivery.body, staleHeaders)).status, 401);
        h.staticData.webhookSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
        assert.equal((await send(delivery.body, delivery.headers)).status, 401, 'another secret');
        delete h.staticData.webhookSecret;
        assert.equal((await send(delivery.body, delivery.headers)).status, 401, 'no secret kept');
        assert.equal(server.started.length, 1, 'nothing more started');
      } finally {
        await server.close();
      }
    } finally {
      h.staticData.webhookSecret = 'x';
      await trigger.webhookMethods.default.delete.call(h.context());
      await new Promise((resolve) => recorder.close(resolve));
    }
  });

  it('after a secret rotation the deliveries carry two signatures and the kept secret still verifies', async () => {
    const { account, h, server } = await activeTrigger(['call.completed']);
    try {
      const rotated = await fetch(`${baseUrl}/v1/webhook_endpoints/${h.staticData.webhookId}/rotate_secret`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.token}` },
      });
      assert.equal(rotated.status, 200);
      const placed = await postCall(baseUrl, account.token, { agent_id: account.agentId, to: '+14155550153' });
      const event = await until('the delivery after rotation', () =>
        server.started.find((e) => (e.data as IDataObject).id === placed.body.id),
      );
      assert.equal(event.type, 'call.completed');
      const answer = server.answers.find((a) => a.eventId === event.id);
      assert.equal(String(answer?.signature).split(' ').length, 2, 'signed with the new and the old secret');
      assert.equal(answer?.status, 200);
    } finally {
      await trigger.webhookMethods.default.delete.call(h.context());
      await server.close();
    }
  });
});
