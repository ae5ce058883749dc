/**
 * A local fake of the ElevenLabs Agents API, built from the documented shapes
 * (/work/shared/reference/elevenlabs-api.md): outbound calls over Twilio and SIP trunk, GET conversation and
 * its audio (MP3, with the API key like every call), the paged agent list and the phone-number list. It records every request and answers by default as the
 * real API would; a test programs other answers per route (status, body, headers, delay, a dropped
 * connection) or stops the server to make it unreachable.
 */
import {
  startFakeProviderServer,
  type FakeProviderReply,
  type FakeRecording,
  type FakeProviderRequest,
  type FakeProviderServer,
} from './fake-provider-server.js';

export type FakeRoute = 'outbound' | 'conversation' | 'audio' | 'conversations' | 'agents' | 'phoneNumbers';

export type FakeRequest = FakeProviderRequest<FakeRoute>;

/** `place`: an outbound call is placed (its conversation made) all the same, whatever the reply says. */
export type FakeReply = FakeProviderReply;

/** The conversation as `GET /v1/convai/conversations/{id}` answers it (`status` and all). */
export type FakeConversation = Record<string, unknown> & { status: string };

export interface FakeAgent {
  agent_id: string;
  name: string;
}

export interface FakePhoneNumber {
  provider: 'twilio' | 'sip_trunk' | 'exotel';
  phone_number_id: string;
  phone_number: string;
  label: string;
  assigned_agent: { agent_id: string; agent_name: string } | null;
}

export interface FakeElevenLabs extends FakeProviderServer<FakeRoute> {
  /** Base URL for ELEVENLABS_BASE_URL. */
  readonly url: string;
  readonly apiKey: string;
  /** Conversation id → state, answered by GET conversation. Outbound calls add theirs as `initiated`. */
  readonly conversations: Map<string, FakeConversation>;
  /** Conversation id → its audio, answered by GET conversation audio (a done conversation has some unless told not). */
  readonly audio: Map<string, FakeRecording>;
  /** The workspace's agents, listed in pages of at most `agentsPageSize` (and of the page_size asked). */
  agents: FakeAgent[];
  agentsPageSize: number;
  phoneNumbers: FakePhoneNumber[];
  /** The conversation id the next successful outbound call will return. */
  nextConversationId(id: string): void;
  /**
   * Ends a conversation as GET conversation then answers it: `done` with its start, duration, summary (and a
   * termination reason, its transcript, analysis and audio), or `failed` with the error their telephony gave.
   */
  endConversation(conversationId: string, end: ConversationEnd): FakeConversation;
  /** The conversations placed for a dial id (sent as the conversation's user_id). */
  conversationsOfDial(dialId: string): FakeConversation[];
  /** Forgets requests, queued replies and conversations (agents and phone numbers stay). */
  reset(): void;
  close(): Promise<void>;
}

export type ConversationEnd =
  | {
      readonly status: 'done';
      readonly startSecs: number;
      readonly durationSecs: number;
      readonly summary: string;
      readonly terminationReason?: string;
      /** Their `transcript[]` items; a greeting by default. */
      readonly transcript?: readonly Record<string, unknown>[];
      /** Their `analysis` (the summary is added); `call_successful: 'success'` by default. */
      readonly analysis?: Record<string, unknown>;
      /** Its audio; null for a conversation without (`has_audio: false`); a few bytes of MP3 by default. */
      readonly audio?: FakeRecording | null;
    }
  | { readonly status: 'failed'; readonly errorReason: string };

const outboundPaths: Record<string, 'twilio' | 'sip_trunk'> = {
  '/v1/convai/twilio/outbound-call': 'twilio',
  '/v1/convai/sip-trunk/outbound-call': 'sip_trunk',
};

function routeOf(method: string, path: string): FakeRoute | 'other' {
  if (method === 'POST' && outboundPaths[path]) return 'outbound';
  if (method === 'GET' && /^\/v1\/convai\/conversations\/[^/]+$/.test(path)) return 'conversation';
  if (method === 'GET' && /^\/v1\/convai\/conversations\/[^/]+\/audio$/.test(path)) return 'audio';
  if (method === 'GET' && path === '/v1/convai/conversations') return 'conversations';
  if (method === 'GET' && path === '/v1/convai/agents') return 'agents';
  if (method === 'GET' && path === '/v1/convai/phone-numbers') return 'phoneNumbers';
  return 'other';
}

export async function startFakeElevenLabs(options: {
  apiKey: string;
  /** The fake's time in ms (conversation start times, the list's time filter): the app's clock, when it is a manual one. */
  now?: () => number;
}): Promise<FakeElevenLabs> {
  const now = options.now ?? Date.now;
  const conversations = new Map<string, FakeConversation>();
  const audio = new Map<string, FakeRecording>();
  const pendingConversationIds: string[] = [];
  let conversationCounter = 0;

  function defaultReply(request: FakeRequest): FakeReply {
    // Their general error envelope; the only header parameter of the whole API is xi-api-key.
    if (request.headers['xi-api-key'] !== fake.apiKey) {
      return {
        status: 401,
        body: { detail: { type: 'authentication_error', code: 'invalid_api_key', message: 'Invalid API key', status: 'invalid_api_key' } },
      };
    }
    switch (request.route) {
      case 'outbound': {
        const body = (request.body ?? {}) as Record<string, unknown>;
        const missing = ['agent_id', 'agent_phone_number_id', 'to_number'].filter((field) => typeof body[field] !== 'string');
        if (missing.length > 0) {
          return {
            status: 422,
            body: { detail: missing.map((field) => ({ loc: ['body', field], msg: 'Field required', type: 'missing' })) },
          };
        }
        conversationCounter += 1;
        const conversationId = pendingConversationIds.shift() ?? `conv_fake${String(conversationCounter).padStart(6, '0')}`;
        const clientData = (body.conversation_initiation_client_data ?? null) as Record<string, unknown> | null;
        conversations.set(conversationId, {
          agent_id: body.agent_id,
          conversation_id: conversationId,
          status: 'initiated',
          user_id: typeof clientData?.user_id === 'string' ? clientData.user_id : null,
          conversation_initiation_client_data: clientData ?? {},
          transcript: [],
          metadata: {
            start_time_unix_secs: Math.floor(now() / 1000),
            call_duration_secs: 0,
            phone_call: { type: outboundPaths[request.path], direction: 'outbound', external_number: body.to_number },
          },
          analysis: null,
          has_audio: false,
          has_user_audio: false,
          has_response_audio: false,
        });
        const kind = outboundPaths[request.path];
        const answer: Record<string, unknown> = { success: true, message: 'Success', conversation_id: conversationId };
        if (kind === 'twilio') answer.callSid = `CA${String(conversationCounter).padStart(32, '0')}`;
        else answer.sip_call_id = `sip-${conversationCounter}`;
        return { status: 200, body: answer };
      }
      case 'conversation': {
        const id = decodeURIComponent(request.path.slice('/v1/convai/conversations/'.length));
        const conversation = conversations.get(id);
        if (!conversation)
          return { status: 404, body: { detail: { status: 'conversation_not_found', message: 'Conversation not found' } } };
        return { status: 200, body: conversation };
      }
      case 'audio': {
        const id = decodeURIComponent(request.path.slice('/v1/convai/conversations/'.length, -'/audio'.length));
        const file = audio.get(id);
        if (!conversations.has(id) || !file)
          return { status: 404, body: { detail: { status: 'audio_not_found', message: 'Audio not found for this conversation' } } };
        return { status: 200, body: file.bytes, headers: { 'content-type': file.contentType } };
      }
      case 'conversations': {
        // Their list: newest first, filtered by agent, user_id and start time; items carry no user_id.
        const agentId = request.query.get('agent_id');
        const userId = request.query.get('user_id');
        const after = Number(request.query.get('call_start_after_unix') ?? '0');
        const size = Math.max(1, Math.min(100, Number(request.query.get('page_size') ?? '30') || 30));
        const listed = [...conversations.values()]
          .filter((c) => (agentId === null || c.agent_id === agentId) && (userId === null || c.user_id === userId))
          .filter((c) => Number((c.metadata as { start_time_unix_secs?: number } | undefined)?.start_time_unix_secs ?? 0) >= after)
          .reverse()
          .slice(0, size)
          .map((c) => ({
            agent_id: c.agent_id,
            conversation_id: c.conversation_id,
            status: c.status,
            start_time_unix_secs: (c.metadata as { start_time_unix_secs?: number } | undefined)?.start_time_unix_secs ?? 0,
            call_duration_secs: 0,
            call_successful: 'unknown',
            direction: 'outbound',
          }));
        return { status: 200, body: { conversations: listed, next_cursor: null, has_more: false } };
      }
      case 'agents': {
        const asked = Number(request.query.get('page_size') ?? '30');
        const size = Math.max(1, Math.min(fake.agentsPageSize, Number.isInteger(asked) && asked > 0 ? asked : 30));
        const cursor = request.query.get('cursor');
        const start = cursor === null ? 0 : Number(cursor.replace(/^cursor_/, ''));
        if (!Number.isInteger(start) || start < 0)
          return { status: 422, body: { detail: [{ loc: ['query', 'cursor'], msg: 'Invalid cursor', type: 'value_error' }] } };
        const page = fake.agents.slice(start, start + size).map((agent) => ({
          ...agent,
          tags: [],
          created_at_unix_secs: 1_750_000_000,
          access_info: { is_creator: true, creator_name: 'Test', creator_email: 'test@example.com', role: 'admin' },
          last_call_time_unix_secs: null,
          archived: false,
        }));
        const hasMore = start + size < fake.agents.length;
        return { status: 200, body: { agents: page, next_cursor: hasMore ? `cursor_${start + size}` : null, has_more: hasMore } };
      }
      case 'phoneNumbers':
        return { status: 200, body: fake.phoneNumbers };
      default:
        return { status: 404, body: { detail: 'Not Found' } };
    }
  }

  const server = await startFakeProviderServer<FakeRoute>(routeOf, defaultReply);
  const fake: FakeElevenLabs = Object.assign(server, {
    apiKey: options.apiKey,
    conversations,
    audio,
    agents: [] as FakeAgent[],
    agentsPageSize: 100,
    phoneNumbers: [] as FakePhoneNumber[],
    nextConversationId: (id: string) => void pendingConversationIds.push(id),
    endConversation(conversationId: string, end: ConversationEnd): FakeConversation {
      const conversation = conversations.get(conversationId);
      if (!conversation) throw new Error(`the fake ElevenLabs has no conversation ${conversationId}`);
      const metadata = (conversation.metadata ?? {}) as Record<string, unknown>;
      if (end.status === 'done') {
        const file = end.audio === undefined ? { contentType: 'audio/mpeg', bytes: Buffer.alloc(64, 7) } : end.audio;
        Object.assign(conversation, {
          status: 'done',
          transcript: end.transcript ?? [{ role: 'agent', message: 'Hi Ada.', time_in_call_secs: 0 }],
          metadata: {
            ...metadata,
            start_time_unix_secs: end.startSecs,
            call_duration_secs: end.durationSecs,
            termination_reason: end.terminationReason ?? 'Call ended by remote party',
          },
          analysis: { ...(end.analysis ?? { call_successful: 'success' }), transcript_summary: end.summary },
          has_audio: file !== null,
          has_user_audio: file !== null,
          has_response_audio: file !== null,
        });
        if (file) audio.set(conversationId, file);
        else audio.delete(conversationId);
      } else {
        Object.assign(conversation, {
          status: 'failed',
          metadata: { ...metadata, call_duration_secs: 0, error: { code: 486, reason: end.errorReason } },
          analysis: null,
        });
      }
      return conversation;
    },
    conversationsOfDial: (dialId: string) => [...conversations.values()].filter((conversation) => conversation.user_id === dialId),
    reset() {
      server.resetRequests();
      conversations.clear();
      audio.clear();
      pendingConversationIds.length = 0;
    },
    close: server.stop,
  });
  return fake;
}
