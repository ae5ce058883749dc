/**
 * A local fake of the Vapi API, from the documented shapes (/work/shared/reference/voice-providers.md §1b):
 * `POST /call` (201 with the call, `status: queued`, and `subscriptionLimits`), `GET /call/{id}` (404 for an
 * unknown id), `GET /call?assistantId=&createdAtGe=&limit=` (a plain array, no filter by customer),
 * `GET /assistant` and `GET /phone-number`; errors in the NestJS shape `{message, error, statusCode}`. It
 * builds their server messages (`{message: {type, call, …}}`) and signs them as an HMAC server credential
 * does by default: `x-signature` = hex HMAC-SHA256 of `"{x-timestamp}.{body}"`. An ended call's
 * `artifact.recordingUrl` points at this fake's own server (`GET /recordings/{id}.wav`), public as Vapi's
 * storage is: it asks for no key.
 *
 * A call's `monitor` (in the create answer and `GET /call/{id}`) carries a `listenUrl` and a `controlUrl`. Vapi's
 * live control URLs are on another host than api.vapi.ai (e.g.
 * `https://phone-call-websocket.aws-us-west-2-backend-production2.vapi.ai/<id>/control`); this fake's is on its
 * own server, `POST /control/{id}`. It takes `{"type":"end-call"}` with or without a key (their
 * `monitorPlan.controlAuthenticationEnabled` is off by default) and answers 200 `{"ok":true}` while the call
 * lives, only recording the request: the call ends when the test says so (`endCall`, their reason
 * `manually-canceled` for one ended through the API). Once the call ended, or for a call it does not know, it
 * answers 404 (the control channel lives as long as the call: what Vapi answers then is unconfirmed); another
 * body is 400.
 */
import { createHmac, randomUUID } from 'node:crypto';
import {
  startFakeProviderServer,
  type FakeProviderReply,
  type FakeRecording,
  type FakeProviderRequest,
  type FakeProviderServer,
} from './fake-provider-server.js';

export type VapiRoute = 'create' | 'getCall' | 'listCalls' | 'control' | 'assistants' | 'phoneNumbers' | 'recording';
export type VapiRequest = FakeProviderRequest<VapiRoute>;

export interface VapiAssistant {
  id: string;
  name: string;
  createdAt: string;
}

export interface VapiNumber {
  id: string;
  number: string;
  provider: string;
  assistantId: string | null;
  name: string;
}

export type VapiCall = Record<string, unknown> & { id: string; status: string };

export interface FakeVapi extends FakeProviderServer<VapiRoute> {
  readonly apiKey: string;
  readonly secret: string;
  readonly calls: Map<string, VapiCall>;
  /** Call id → the recording its `artifact.recordingUrl` serves. */
  readonly recordings: Map<string, FakeRecording>;
  /** The organisation's assistants, listed newest first in pages of at most `assistantsPageSize` (and of the limit asked). */
  assistants: VapiAssistant[];
  assistantsPageSize: number;
  phoneNumbers: VapiNumber[];
  /** When true, creates answer 201 with `subscriptionLimits.concurrencyBlocked: true` (the call never connects). */
  concurrencyBlocked: boolean;
  /**
   * Ends a call as Vapi records it: `endedReason`, and for a conversation its times, summary (with its
   * analysis), messages and recording.
   */
  endCall(callId: string, end: VapiEnd): VapiCall;
  /** The call is answered (`in-progress`) at `startedAt` (now by default). */
  answerCall(callId: string, startedAt?: string): VapiCall;
  /** The requests to the call's control URL (`POST /control/{id}`), answered or not. */
  controlsOf(callId: string): VapiRequest[];
  /** An `end-of-call-report` server message for a call, as Vapi sends it (compact JSON). */
  endOfCallReport(call: VapiCall): string;
  /** A `status-update` server message. */
  statusUpdate(call: VapiCall, status: string): string;
  /** The headers of a signed server message at `timestamp` (ms), with `secret` (the fake's by default). */
  signedHeaders(body: string, timestamp: number, secret?: string): Record<string, string>;
  reset(): void;
  close(): Promise<void>;
}

export interface VapiEnd {
  readonly endedReason: string;
  readonly startedAt?: string;
  readonly endedAt?: string;
  readonly summary?: string;
  /** Their `analysis` beside the summary; `successEvaluation: 'true'` by default, {} for none yet. */
  readonly analysis?: Record<string, unknown>;
  /** Their `artifact.messages[]`; a greeting and an answer by default for an answered call. */
  readonly messages?: readonly Record<string, unknown>[];
  /** The recording; null for none (no `recordingUrl`); a few bytes of WAV by default for an answered call. */
  readonly recording?: FakeRecording | null;
}

const defaultMessages = [
  { role: 'bot', message: 'Hi Ada.', time: 1_777_777_000_000, secondsFromStart: 0.5 },
  { role: 'user', message: 'Hello?', time: 1_777_777_002_000, secondsFromStart: 2.5 },
];

const nestError = (statusCode: number, message: string | string[], error: string): FakeProviderReply => ({
  status: statusCode,
  body: { message, error, statusCode },
});

function routeOf(method: string, path: string): VapiRoute | 'other' {
  if (method === 'POST' && path === '/call') return 'create';
  if (method === 'GET' && path === '/call') return 'listCalls';
  if (method === 'GET' && /^\/call\/[^/]+$/.test(path)) return 'getCall';
  if (method === 'POST' && /^\/control\/[^/]+$/.test(path)) return 'control';
  if (method === 'GET' && path === '/assistant') return 'assistants';
  if (method === 'GET' && path === '/phone-number') return 'phoneNumbers';
  if (method === 'GET' && /^\/recordings\/[^/]+\.wav$/.test(path)) return 'recording';
  return 'other';
}

export async function startFakeVapi(options: {
  apiKey: string;
  secret: string;
  /** The fake's time in ms (calls' createdAt, the list's time filter): the app's clock, when it is a manual one. */
  now?: () => number;
}): Promise<FakeVapi> {
  const now = options.now ?? Date.now;
  const calls = new Map<string, VapiCall>();
  const recordings = new Map<string, FakeRecording>();

  function defaultReply(request: VapiRequest): FakeProviderReply {
    if (request.route === 'recording') {
      // A public file, whatever headers come with it (the contract asks that none do).
      const file = recordings.get(decodeURIComponent(request.path.slice('/recordings/'.length, -'.wav'.length)));
      return file
        ? { status: 200, body: file.bytes, headers: { 'content-type': file.contentType } }
        : nestError(404, 'Not Found', 'Not Found');
    }
    if (request.route === 'control') {
      // The control channel of a live call: no key needed (their controlAuthenticationEnabled is off by default).
      const call = calls.get(decodeURIComponent(request.path.slice('/control/'.length)));
      if (!call || call.status === 'ended') return nestError(404, 'Call not found or already ended.', 'Not Found');
      if ((request.body as { type?: unknown } | null)?.type !== 'end-call') {
        return nestError(400, ['type must be one of the following values: end-call, say, add-message, transfer'], 'Bad Request');
      }
      return { status: 200, body: { ok: true } };
    }
    if (request.headers.authorization !== `Bearer ${fake.apiKey}`) {
      return nestError(
        401,
        'Invalid Key. Hot tip, you may be using the private key instead of the public key, or vice versa.',
        'Unauthorized',
      );
    }
    switch (request.route) {
      case 'create': {
        const body = (request.body ?? {}) as Record<string, any>;
        const problems = [
          ...(typeof body.assistantId === 'string' ? [] : ['assistantId must be a string']),
          ...(typeof body.phoneNumberId === 'string' ? [] : ['phoneNumberId must be a string']),
          ...(typeof body.customer?.number === 'string' ? [] : ['customer.number must be a valid phone number in the E.164 format.']),
        ];
        if (problems.length > 0) return nestError(400, problems, 'Bad Request');
        if (!fake.assistants.some((assistant) => assistant.id === body.assistantId)) {
          return nestError(400, [`Couldn't Get Assistant. Assistant ${body.assistantId} Not Found.`], 'Bad Request');
        }
        if (!fake.phoneNumbers.some((number) => number.id === body.phoneNumberId)) {
          return nestError(400, [`Couldn't Get Phone Number. Phone Number ${body.phoneNumberId} Not Found.`], 'Bad Request');
        }
        const createdAt = new Date(now()).toISOString();
        const id = randomUUID();
        const call: VapiCall = {
          id,
          orgId: '5b1d2f49-0000-4000-8000-000000000001',
          type: 'outboundPhoneCall',
          status: 'queued',
          assistantId: body.assistantId,
          phoneNumberId: body.phoneNumberId,
          customer: body.customer,
          assistantOverrides: body.assistantOverrides ?? {},
          createdAt,
          updatedAt: createdAt,
          cost: 0,
          phoneCallProvider: 'twilio',
          monitor: { listenUrl: `wss://${new URL(fake.url).host}/${id}/listen`, controlUrl: `${fake.url}/control/${id}` },
        };
        calls.set(id, call);
        const subscriptionLimits = { concurrencyBlocked: fake.concurrencyBlocked, concurrencyLimit: 10, remainingConcurrentCalls: 8 };
        return { status: 201, body: { subscriptionLimits, ...call } };
      }
      case 'getCall': {
        const call = calls.get(decodeURIComponent(request.path.slice('/call/'.length)));
        return call ? { status: 200, body: call } : nestError(404, 'Not Found', 'Not Found');
      }
      case 'listCalls': {
        const assistantId = request.query.get('assistantId');
        const after = request.query.get('createdAtGe');
        const limit = Number(request.query.get('limit') ?? '100') || 100;
        const listed = [...calls.values()]
          .filter((call) => assistantId === null || call.assistantId === assistantId)
          .filter((call) => after === null || Date.parse(String(call.createdAt)) >= Date.parse(after))
          .reverse()
          .slice(0, limit);
        return { status: 200, body: listed };
      }
      case 'assistants': {
        const limit = Number(request.query.get('limit') ?? '100') || 100;
        const before = request.query.get('createdAtLt');
        const listed = [...fake.assistants]
          .sort((a, b) => b.createdAt.localeCompare(a.createdAt))
          .filter((assistant) => before === null || assistant.createdAt < before)
          .slice(0, Math.min(limit, fake.assistantsPageSize))
          .map((assistant) => ({ ...assistant, orgId: 'org', updatedAt: assistant.createdAt, model: { provider: 'openai' } }));
        return { status: 200, body: listed };
      }
      case 'phoneNumbers':
        return { status: 200, body: fake.phoneNumbers.map((number) => ({ ...number, orgId: 'org', status: 'active' })) };
      default:
        return nestError(404, `Cannot ${request.method} ${request.path}`, 'Not Found');
    }
  }

  const server = await startFakeProviderServer<VapiRoute>(routeOf, defaultReply);
  const fake: FakeVapi = Object.assign(server, {
    apiKey: options.apiKey,
    secret: options.secret,
    calls,
    recordings,
    assistants: [] as VapiAssistant[],
    assistantsPageSize: 1_000,
    phoneNumbers: [] as VapiNumber[],
    concurrencyBlocked: false,
    endCall(callId: string, end: VapiEnd): VapiCall {
      const call = calls.get(callId);
      if (!call) throw new Error(`the fake Vapi has no call ${callId}`);
      // A call never answered has said nothing and recorded nothing; one answered earlier (answerCall) keeps its start.
      const startedAt = end.startedAt ?? (typeof call.startedAt === 'string' ? call.startedAt : undefined);
      const answered = startedAt !== undefined;
      const messages = end.messages ?? (answered ? defaultMessages : []);
      const file =
        end.recording === undefined && answered ? { contentType: 'audio/wav', bytes: Buffer.alloc(64, 5) } : (end.recording ?? null);
      if (file) recordings.set(callId, file);
      else recordings.delete(callId);
      const transcript = messages
        .filter((message) => message.role === 'bot' || message.role === 'user')
        .map((message) => `${message.role === 'bot' ? 'AI' : 'User'}: ${String(message.message)}`)
        .join('\n');
      const recordingUrl = file ? `${fake.url}/recordings/${encodeURIComponent(callId)}.wav` : undefined;
      delete call.analysis;
      Object.assign(call, {
        status: 'ended',
        endedReason: end.endedReason,
        ...(startedAt ? { startedAt } : {}),
        endedAt: end.endedAt ?? new Date(now()).toISOString(),
        ...(end.summary === undefined ? {} : { analysis: { summary: end.summary, ...(end.analysis ?? { successEvaluation: 'true' }) } }),
        artifact: { transcript, messages, ...(recordingUrl ? { recordingUrl } : {}) },
      });
      return call;
    },
    answerCall(callId: string, startedAt = new Date(now()).toISOString()): VapiCall {
      const call = calls.get(callId);
      if (!call) throw new Error(`the fake Vapi has no call ${callId}`);
      return Object.assign(call, { status: 'in-progress', startedAt });
    },
    controlsOf: (callId: string) => server.requestsTo('control').filter((request) => request.path === `/control/${callId}`),
    endOfCallReport(call: VapiCall): string {
      const artifact = (call.artifact ?? {}) as Record<string, unknown>;
      return JSON.stringify({
        message: {
          type: 'end-of-call-report',
          timestamp: now(),
          endedReason: call.endedReason,
          startedAt: call.startedAt,
          endedAt: call.endedAt,
          cost: 0.12,
          analysis: call.analysis ?? {},
          artifact: call.artifact,
          // The live payload repeats these at the top (their SDK's types lack them).
          ...(artifact.recordingUrl ? { recordingUrl: artifact.recordingUrl } : {}),
          transcript: artifact.transcript,
          messages: artifact.messages,
          call,
          customer: call.customer,
          phoneNumber: { id: call.phoneNumberId },
        },
      });
    },
    statusUpdate(call: VapiCall, status: string): string {
      return JSON.stringify({
        message: {
          type: 'status-update',
          timestamp: now(),
          status,
          ...(status === 'ended' ? { endedReason: call.endedReason ?? 'customer-ended-call' } : {}),
          call: { ...call, status },
        },
      });
    },
    signedHeaders(body: string, timestamp: number, secret = options.secret): Record<string, string> {
      // Their HMAC plan's defaults, written by the fake itself: "{timestamp}.{body}", hex.
      const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
      return { 'content-type': 'application/json', 'x-signature': signature, 'x-timestamp': String(timestamp) };
    },
    reset() {
      server.resetRequests();
      calls.clear();
      recordings.clear();
      fake.concurrencyBlocked = false;
    },
    close: server.stop,
  });
  return fake;
}
