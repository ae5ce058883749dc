/**
 * A local fake of the Retell AI API, from the documented shapes (/work/shared/reference/voice-providers.md
 * §1a): `POST /v2/create-phone-call` (201 with the call, `call_status: registered`), `GET /v2/get-call/{id}`
 * (422 for an id it does not know), `POST /v3/list-calls` with a `metadata` filter, `GET /list-agents` (one
 * entry per version unless `is_latest=true`, paged after a `pagination_key` + `pagination_key_version` pair),
 * `GET /list-phone-numbers` and `GET /get-concurrency`; every error in their one shape
 * `{"status":"error","message":…}`. It also builds their webhooks (`{event, call}`) signed as they sign them:
 * `x-retell-signature: v=<ms>,d=<hex HMAC-SHA256(body + ms)>` keyed with the API key, over the compact JSON sent.
 */
import { createHmac } from 'node:crypto';
import {
  startFakeProviderServer,
  type FakeProviderReply,
  type FakeProviderRequest,
  type FakeProviderServer,
} from './fake-provider-server.js';

export type RetellRoute = 'create' | 'getCall' | 'listCalls' | 'agents' | 'phoneNumbers' | 'concurrency';
export type RetellRequest = FakeProviderRequest<RetellRoute>;

export interface RetellAgent {
  agent_id: string;
  agent_name: string;
  version: number;
}

export interface RetellNumber {
  phone_number: string;
  phone_number_type: string;
  nickname: string;
  inbound_agent_id: string | null;
  outbound_agent_id: string | null;
}

/** A call as `GET /v2/get-call` answers it. */
export type RetellCall = Record<string, unknown> & { call_id: string; call_status: string };

export interface FakeRetell extends FakeProviderServer<RetellRoute> {
  readonly apiKey: string;
  readonly calls: Map<string, RetellCall>;
  /** One entry per agent version, listed in this order. */
  agents: RetellAgent[];
  /** Agents per page of GET /list-agents (at most the limit asked). */
  agentsPageSize: number;
  /** When true, GET /list-agents lists every version even with is_latest=true (as before that parameter came). */
  everyVersion: boolean;
  phoneNumbers: RetellNumber[];
  /** The call id the next create will return. */
  nextCallId(id: string): void;
  /**
   * Ends a call as Retell records it: `not_connected` / `error` with a reason, or `ended` after `durationMs`
   * (answered at `startMs`), with `analysis` once analysed.
   */
  endCall(callId: string, end: RetellEnd): RetellCall;
  /** The webhook body of an event about a call, as Retell sends it (compact JSON). */
  webhookBody(event: 'call_started' | 'call_ended' | 'call_analyzed', call: RetellCall): string;
  /** The `x-retell-signature` of a body at `timestampMs`, with `key` (the API key by default). */
  sign(body: string, timestampMs: number, key?: string): string;
  /** Forgets requests, replies and calls (agents and numbers stay). */
  reset(): void;
  close(): Promise<void>;
}

export interface RetellEnd {
  readonly status: 'not_connected' | 'ended' | 'error';
  readonly reason: string;
  readonly startMs?: number;
  readonly durationMs?: number;
  readonly analysis?: { call_summary?: string; in_voicemail?: boolean } | null;
}

const error = (status: number, message: string): FakeProviderReply => ({ status, body: { status: 'error', message } });

function routeOf(method: string, path: string): RetellRoute | 'other' {
  if (method === 'POST' && path === '/v2/create-phone-call') return 'create';
  if (method === 'GET' && /^\/v2\/get-call\/[^/]+$/.test(path)) return 'getCall';
  if (method === 'POST' && path === '/v3/list-calls') return 'listCalls';
  if (method === 'GET' && path === '/list-agents') return 'agents';
  if (method === 'GET' && path === '/list-phone-numbers') return 'phoneNumbers';
  if (method === 'GET' && path === '/get-concurrency') return 'concurrency';
  return 'other';
}

export async function startFakeRetell(options: { apiKey: string }): Promise<FakeRetell> {
  const calls = new Map<string, RetellCall>();
  const pendingIds: string[] = [];
  let counter = 0;

  function defaultReply(request: RetellRequest): FakeProviderReply {
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
        const agentId = typeof body.override_agent_id === 'string' ? body.override_agent_id : number?.outbound_agent_id;
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
        // One entry per version unless is_latest=true; the next page starts after the (id, version) pair.
        const limit = Math.min(fake.agentsPageSize, Number(request.query.get('limit') ?? '1000') || 1000);
        const latest = new Map<string, number>();
        for (const agent of fake.agents) latest.set(agent.agent_id, Math.max(agent.version, latest.get(agent.agent_id) ?? -1));
        const latestOnly = request.query.get('is_latest') === 'true' && !fake.everyVersion;
        const listed = latestOnly ? fake.agents.filter((agent) => latest.get(agent.agent_id) === agent.version) : fake.agents;
        const key = request.query.get('pagination_key');
        const keyVersion = request.query.get('pagination_key_version');
        const start =
          key === null
            ? 0
            : listed.findIndex((agent) => agent.agent_id === key && (keyVersion === null || String(agent.version) === keyVersion)) + 1;
        const page = listed.slice(start, start + limit).map((agent) => ({
          ...agent,
          response_engine: { type: 'retell-llm', llm_id: 'llm_fake' },
          voice_id: 'retell-Cimo',
          last_modification_timestamp: 1_750_000_000_000,
        }));
        return { status: 200, body: page };
      }
      case 'phoneNumbers':
        return {
          status: 200,
          body: fake.phoneNumbers.map((number) => ({ ...number, phone_number_pretty: number.phone_number, area_code: 415 })),
        };
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
    agents: [] as RetellAgent[],
    agentsPageSize: 1000,
    everyVersion: false,
    phoneNumbers: [] as RetellNumber[],
    nextCallId: (id: string) => void pendingIds.push(id),
    endCall(callId: string, end: RetellEnd): RetellCall {
      const call = calls.get(callId);
      if (!call) throw new Error(`the fake Retell has no call ${callId}`);
      const startMs = end.startMs ?? Date.now() - (end.durationMs ?? 0);
      Object.assign(call, {
        call_status: end.status,
        disconnection_reason: end.reason,
        ...(end.status === 'ended'
          ? {
              start_timestamp: startMs,
              end_timestamp: startMs + (end.durationMs ?? 0),
              duration_ms: end.durationMs ?? 0,
              transcript: 'Agent: Hi Ada.\nUser: Hello?',
              recording_url: 'https://example.invalid/recording.wav',
            }
          : { end_timestamp: Date.now() }),
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
      pendingIds.length = 0;
    },
    close: server.stop,
  });
  return fake;
}
