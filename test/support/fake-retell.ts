/**
 * A local fake of the Retell AI API, from the documented shapes (/work/shared/reference/voice-providers.md
 * §1a): `POST /v2/create-phone-call` (201 with the call, `call_status: registered`), `GET /v2/get-call/{id}`
 * (422 for an id it does not know), `POST /v3/list-calls` with a `metadata` filter, `POST /v2/list-agents`
 * (one item per agent, filtered by `filter_criteria.channel`), `GET /v2/list-phone-numbers` (numbers bound to
 * weighted `outbound_agents`) and `GET /get-concurrency`; every error in their one shape
 * `{"status":"error","message":…}`. Both v2 lists page honestly (integrations-2026.md §2): at most `limit`
 * (1 to 1000) and `pageSize` items, `{items, has_more, pagination_key}`, the key an opaque token this fake
 * issued. The lists Retell removed in 2026 (`GET /list-agents`, `GET /list-chat-agents`,
 * `GET /list-phone-numbers`) answer 404 in that shape (the words of their real answer are unconfirmed), so
 * nothing can lean on them unnoticed. `POST /v2/stop-call/{call_id}` (no body) answers 204 with nothing for a call
 * still `registered` (ringing) or `ongoing`, as documented ("Stop an ongoing call"; that it works while ringing
 * is unconfirmed), and only records it: the call ends when the test says so (`endCall`, their reason
 * `manual_stopped`), as Retell ends it a moment later and reports it by webhook. For a call already over it
 * answers 400, for an id it does not know 422 (their documented errors are 400/401/422/500; which one each case
 * gets, and the words, are unconfirmed). An ended call's `recording_url` points at this fake's own server
 * (`GET /recordings/{call_id}.wav`), public as Retell's are: it asks for no key. It also builds their webhooks (`{event, call}`) signed as they sign them:
 * `x-retell-signature: v=<ms>,d=<hex HMAC-SHA256(body + ms)>` keyed with the API key, over the compact JSON sent.
 */
import { createHmac, randomBytes } from 'node:crypto';
import {
  startFakeProviderServer,
  type FakeProviderReply,
  type FakeRecording,
  type FakeProviderRequest,
  type FakeProviderServer,
} from './fake-provider-server.js';

export type RetellRoute = 'create' | 'getCall' | 'listCalls' | 'stop' | 'agents' | 'phoneNumbers' | 'concurrency' | 'removed' | 'recording';
export type RetellRequest = FakeProviderRequest<RetellRoute>;

export interface RetellAgent {
  agent_id: string;
  agent_name: string;
  /** `voice` when absent. */
  channel?: 'voice' | 'chat';
}

export interface RetellAgentShare {
  agent_id: string;
  agent_version: number;
  weight: number;
}

export interface RetellNumber {
  phone_number: string;
  phone_number_type: string;
  nickname: string;
  /** The weights of a list add up to 1; one of its agents is picked per call that names none. */
  outbound_agents?: RetellAgentShare[];
  inbound_agents?: RetellAgentShare[];
  /** The single-agent fields of numbers bound before 2026-03-31, where a workspace still answers them. */
  outbound_agent_id?: string | null;
  inbound_agent_id?: string | null;
}

/** A call as `GET /v2/get-call` answers it. */
export type RetellCall = Record<string, unknown> & { call_id: string; call_status: string };

export interface FakeRetell extends FakeProviderServer<RetellRoute> {
  readonly apiKey: string;
  readonly calls: Map<string, RetellCall>;
  /** Call id → the recording its `recording_url` serves. */
  readonly recordings: Map<string, FakeRecording>;
  /** The workspace's agents, listed in this order. */
  agents: RetellAgent[];
  /** Items per page of either v2 list (at most the `limit` asked). */
  pageSize: number;
  phoneNumbers: RetellNumber[];
  /** The call id the next create will return. */
  nextCallId(id: string): void;
  /** The call is answered (`ongoing`, their `call_started`) at `startMs` (now by default). */
  answerCall(callId: string, startMs?: number): RetellCall;
  /** The `POST /v2/stop-call/{call_id}` requests received for a call, answered or not. */
  stopsOf(callId: string): RetellRequest[];
  /**
   * Ends a call as Retell records it: `not_connected` / `error` with a reason, or `ended` after `durationMs`
   * (answered at `startMs`) with its transcript and recording, and `analysis` once analysed.
   */
  endCall(callId: string, end: RetellEnd): RetellCall;
  /** The webhook body of an event about a call, as Retell sends it (compact JSON). */
  webhookBody(event: 'call_started' | 'call_ended' | 'call_analyzed', call: RetellCall): string;
  /** The `x-retell-signature` of a body at `timestampMs`, with `key` (the API key by default). */
  sign(body: string, timestampMs: number, key?: string): string;
  /** Forgets requests, replies, calls and the pagination keys issued (agents and numbers stay). */
  reset(): void;
  close(): Promise<void>;
}

export interface RetellEnd {
  readonly status: 'not_connected' | 'ended' | 'error';
  readonly reason: string;
  readonly startMs?: number;
  readonly durationMs?: number;
  /** When a call that was never answered ended (now by default); an answered one ends at its start plus its duration. */
  readonly endMs?: number;
  /** `call_analysis` beside their defaults (successful, positive, not voicemail); null takes it away. */
  readonly analysis?: {
    call_summary?: string;
    in_voicemail?: boolean;
    /** Undefined leaves it out (no judgement). */
    call_successful?: boolean | undefined;
    user_sentiment?: string;
    custom_analysis_data?: Record<string, unknown>;
  } | null;
  /** Their `transcript_object[]` of an ended call; a greeting and an answer by default. */
  readonly transcriptObject?: readonly RetellTurn[];
  /** An ended call's recording; null for none (no `recording_url`); a few bytes of WAV by default. */
  readonly recording?: FakeRecording | null;
}

/** A turn of their `transcript_object`: who, what, and each word's times in seconds from the start. */
export interface RetellTurn {
  readonly role: 'agent' | 'user';
  readonly content: string;
  readonly words: readonly { readonly word: string; readonly start: number; readonly end: number }[];
}

const defaultTurns: readonly RetellTurn[] = [
  {
    role: 'agent',
    content: 'Hi Ada.',
    words: [
      { word: 'Hi', start: 0.4, end: 0.6 },
      { word: 'Ada.', start: 0.6, end: 1 },
    ],
  },
  { role: 'user', content: 'Hello?', words: [{ word: 'Hello?', start: 1.8, end: 2.3 }] },
];

function withToolCalls(turns: readonly RetellTurn[]): unknown[] {
  if (turns.length === 0) return [];
  const invocation = { role: 'tool_call_invocation', tool_call_id: 'tool_1', name: 'check_calendar', arguments: '{"day":"tomorrow"}' };
  const result = { role: 'tool_call_result', tool_call_id: 'tool_1', content: '{"free":["14:00"]}' };
  return [turns[0], invocation, result, ...turns.slice(1)];
}

const error = (status: number, message: string): FakeProviderReply => ({ status, body: { status: 'error', message } });

function routeOf(method: string, path: string): RetellRoute | 'other' {
  if (method === 'POST' && path === '/v2/create-phone-call') return 'create';
  if (method === 'GET' && /^\/v2\/get-call\/[^/]+$/.test(path)) return 'getCall';
  if (method === 'POST' && path === '/v3/list-calls') return 'listCalls';
  if (method === 'POST' && /^\/v2\/stop-call\/[^/]+$/.test(path)) return 'stop';
  if (method === 'POST' && path === '/v2/list-agents') return 'agents';
  if (method === 'GET' && path === '/v2/list-phone-numbers') return 'phoneNumbers';
  if (['/list-agents', '/list-chat-agents', '/list-phone-numbers'].includes(path)) return 'removed';
  if (method === 'GET' && path === '/get-concurrency') return 'concurrency';
  if (method === 'GET' && /^\/recordings\/[^/]+\.wav$/.test(path)) return 'recording';
  return 'other';
}

/** The agent a number gives a call that names none: of its weighted list the heaviest, else the older field. */
function boundAgent(number: RetellNumber): string | null | undefined {
  const shares = number.outbound_agents ?? [];
  if (shares.length === 0) return number.outbound_agent_id;
  return shares.reduce((best, share) => (share.weight > best.weight ? share : best)).agent_id;
}

export async function startFakeRetell(options: { apiKey: string }): Promise<FakeRetell> {
  const calls = new Map<string, RetellCall>();
  const recordings = new Map<string, FakeRecording>();
  const pendingIds: string[] = [];
  /** The pagination keys issued: which list they belong to and where its next page starts. */
  const pageKeys = new Map<string, { list: 'agents' | 'phoneNumbers'; start: number }>();
  let counter = 0;

  /** A page of a v2 list, from `limit` and `pagination_key` in the query; a key of another list is refused. */
  function page(request: RetellRequest, list: 'agents' | 'phoneNumbers', items: readonly unknown[]): FakeProviderReply {
    const query = request.query;
    const limit = query.has('limit') ? Number(query.get('limit')) : 1_000;
    // Stricter than documented: the version half of the retired key pair is refused, not ignored.
    if (!Number.isInteger(limit) || limit < 1 || limit > 1_000 || query.has('pagination_key_version')) {
      return error(400, 'Invalid request format, please check API reference.');
    }
    const key = query.get('pagination_key');
    const from = key === null ? { list, start: 0 } : pageKeys.get(key);
    if (!from || from.list !== list) return error(400, 'Invalid pagination_key.');
    const end = from.start + Math.min(limit, fake.pageSize);
    const hasMore = end < items.length;
    if (!hasMore) return { status: 200, body: { items: items.slice(from.start, end), has_more: false } };
    const next = `pk_${randomBytes(9).toString('base64url')}`;
    pageKeys.set(next, { list, start: end });
    return { status: 200, body: { items: items.slice(from.start, end), has_more: true, pagination_key: next } };
  }

  function defaultReply(request: RetellRequest): FakeProviderReply {
    if (request.route === 'recording') {
      // A public file, whatever headers come with it (the contract asks that none do).
      const file = recordings.get(decodeURIComponent(request.path.slice('/recordings/'.length, -'.wav'.length)));
      return file ? { status: 200, body: file.bytes, headers: { 'content-type': file.contentType } } : error(404, 'Not Found');
    }
    if (request.headers.authorization !== `Bearer ${fake.apiKey}`) return error(401, 'API key is missing or invalid.');
    switch (request.route) {
      case 'create': {
        const body = (request.body ?? {}) as Record<string, unknown>;
        if (typeof body.from_number !== 'string' || typeof body.to_number !== 'string') {
          return error(400, 'Invalid request format, please check API reference.');
        }
        const variables = body.retell_llm_dynamic_variables;
        if (variables !== undefined && Object.values(variables as object).some((value) => typeof value !== 'string')) {
          return error(400, 'Invalid request format, please check API reference.');
        }
        const number = fake.phoneNumbers.find((candidate) => candidate.phone_number === body.from_number);
        const agentId = typeof body.override_agent_id === 'string' ? body.override_agent_id : number && boundAgent(number);
        if (!number || !fake.agents.some((agent) => agent.agent_id === agentId)) {
          return error(422, 'Cannot find requested asset under given api key.');
        }
        counter += 1;
        const callId = pendingIds.shift() ?? `call_fake${String(counter).padStart(24, '0')}`;
        const call: RetellCall = {
          call_id: callId,
          agent_id: agentId,
          agent_version: 1,
          call_type: 'phone_call',
          direction: 'outbound',
          from_number: body.from_number,
          to_number: body.to_number,
          call_status: 'registered',
          metadata: body.metadata ?? {},
          retell_llm_dynamic_variables: variables ?? {},
          telephony_identifier: { twilio_call_sid: `CA${String(counter).padStart(32, '0')}` },
        };
        calls.set(callId, call);
        return { status: 201, body: call };
      }
      case 'getCall': {
        const call = calls.get(decodeURIComponent(request.path.slice('/v2/get-call/'.length)));
        return call ? { status: 200, body: call } : error(422, 'Cannot find requested asset under given api key.');
      }
      case 'stop': {
        const call = calls.get(decodeURIComponent(request.path.slice('/v2/stop-call/'.length)));
        if (!call) return error(422, 'Cannot find requested asset under given api key.');
        if (call.call_status !== 'registered' && call.call_status !== 'ongoing') return error(400, 'Call is not ongoing.');
        return { status: 204 };
      }
      case 'listCalls': {
        const body = (request.body ?? {}) as {
          filter_criteria?: { metadata?: { key: string; value: string; op: string }[] };
          limit?: number;
        };
        const conditions = body.filter_criteria?.metadata ?? [];
        const items = [...calls.values()]
          .filter((call) => conditions.every((c) => c.op === 'eq' && (call.metadata as Record<string, unknown>)[c.key] === c.value))
          .reverse()
          .slice(0, body.limit ?? 50);
        return { status: 200, body: { items, has_more: false } };
      }
      case 'agents': {
        const filter = (request.body as { filter_criteria?: { channel?: { op?: string; value?: string } } } | null)?.filter_criteria;
        const channel = filter?.channel;
        if (channel && channel.op !== 'eq') return error(400, 'Invalid request format, please check API reference.');
        const listed = fake.agents
          .filter((agent) => channel === undefined || (agent.channel ?? 'voice') === channel.value)
          .map((agent) => ({
            channel: 'voice',
            ...agent,
            response_engine: { type: 'retell-llm', llm_id: 'llm_fake' },
            voice_id: 'retell-Cimo',
            tags: [],
            user_modified_timestamp: 1_750_000_000_000,
          }));
        return page(request, 'agents', listed);
      }
      case 'phoneNumbers':
        return page(
          request,
          'phoneNumbers',
          fake.phoneNumbers.map((number) => ({ ...number, phone_number_pretty: number.phone_number, area_code: 415 })),
        );
      case 'removed':
        return error(404, 'Not Found');
      case 'concurrency':
        return { status: 200, body: { current_concurrency: 0, concurrency_limit: 20, base_concurrency: 20, purchased_concurrency: 0 } };
      default:
        return error(404, 'Not Found');
    }
  }

  const server = await startFakeProviderServer<RetellRoute>(routeOf, defaultReply);
  const fake: FakeRetell = Object.assign(server, {
    apiKey: options.apiKey,
    calls,
    recordings,
    agents: [] as RetellAgent[],
    pageSize: 1_000,
    phoneNumbers: [] as RetellNumber[],
    nextCallId: (id: string) => void pendingIds.push(id),
    answerCall(callId: string, startMs = Date.now()): RetellCall {
      const call = calls.get(callId);
      if (!call) throw new Error(`the fake Retell has no call ${callId}`);
      return Object.assign(call, { call_status: 'ongoing', start_timestamp: startMs });
    },
    stopsOf: (callId: string) => server.requestsTo('stop').filter((request) => request.path === `/v2/stop-call/${callId}`),
    endCall(callId: string, end: RetellEnd): RetellCall {
      const call = calls.get(callId);
      if (!call) throw new Error(`the fake Retell has no call ${callId}`);
      // Answered earlier (answerCall): the call keeps that start unless told another.
      const answeredMs = typeof call.start_timestamp === 'number' ? call.start_timestamp : undefined;
      const startMs = end.startMs ?? answeredMs ?? Date.now() - (end.durationMs ?? 0);
      const turns = end.transcriptObject ?? defaultTurns;
      const file = end.recording === undefined ? { contentType: 'audio/wav', bytes: Buffer.alloc(64, 3) } : end.recording;
      if (end.status === 'ended' && file) recordings.set(callId, file);
      else recordings.delete(callId);
      delete call.recording_url;
      Object.assign(call, {
        call_status: end.status,
        disconnection_reason: end.reason,
        ...(end.status === 'ended'
          ? {
              start_timestamp: startMs,
              end_timestamp: startMs + (end.durationMs ?? 0),
              duration_ms: end.durationMs ?? 0,
              transcript: turns.map((turn) => `${turn.role === 'agent' ? 'Agent' : 'User'}: ${turn.content}`).join('\n'),
              transcript_object: turns,
              // The same turns with the agent's tool calls between them: for their dashboard, no turns of a talk.
              transcript_with_tool_calls: withToolCalls(turns),
              ...(file ? { recording_url: `${fake.url}/recordings/${encodeURIComponent(callId)}.wav` } : {}),
            }
          : { end_timestamp: end.endMs ?? Date.now() }),
      });
      if (end.analysis === null) delete call.call_analysis;
      else if (end.analysis)
        call.call_analysis = { call_successful: true, user_sentiment: 'Positive', in_voicemail: false, ...end.analysis };
      return call;
    },
    webhookBody(event: 'call_started' | 'call_ended' | 'call_analyzed', call: RetellCall): string {
      // call_ended carries every field but call_analysis; call_analyzed adds it.
      const { call_analysis, ...rest } = call;
      return JSON.stringify({ event, call: event === 'call_analyzed' ? { ...rest, call_analysis } : rest });
    },
    // As their SDK's sign(): the digest of the body followed by the timestamp, written by the fake itself.
    sign: (body: string, timestampMs: number, key = options.apiKey) =>
      `v=${timestampMs},d=${createHmac('sha256', key).update(`${body}${timestampMs}`).digest('hex')}`,
    reset() {
      server.resetRequests();
      calls.clear();
      pageKeys.clear();
      recordings.clear();
      pendingIds.length = 0;
    },
    close: server.stop,
  });
  return fake;
}
