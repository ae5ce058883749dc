/**
 * A fake ElevenLabs for the batch scenario, in a process of its own (started by bench/batch.ts) so that its
 * timers never share an event loop with the server or the load. It answers each outbound call (Twilio and
 * SIP trunk, as the adapter calls them) after FAKE_ANSWER_MS, then sends the call's signed
 * post_call_transcription webhook to FAKE_WEBHOOK_URL FAKE_CALL_MS after the answer (ranges "min-max", drawn
 * uniformly). FAKE_LOSE_ANSWER_RATE (0 to 1) is the share of creates whose answer is lost (the connection
 * is dropped instead): half of them placed the call all the same (it happens and its webhook comes), half
 * placed nothing. Conversations are listed by the dial id sent as their user_id, as callgate's search asks.
 * It watches what a provider sees: calls under way at once, how long a freed slot waits for its next dial,
 * and numbers called more than once.
 * Shapes: /work/shared/reference/elevenlabs-api.md (sections 1, 2, 4, 5, 7).
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

function range(name: string, fallback: string): [number, number] {
  const [min, max] = (process.env[name] ?? fallback).split('-').map(Number);
  if (!Number.isFinite(min) || !Number.isFinite(max) || min! > max!) throw new Error(`${name} must be "min-max" in ms`);
  return [min!, max!];
}

const answerMs = range('FAKE_ANSWER_MS', '300-1500');
const callMs = range('FAKE_CALL_MS', '5000-10000');
const loseAnswerRate = Number(process.env.FAKE_LOSE_ANSWER_RATE ?? '0');
const apiKey = process.env.FAKE_API_KEY ?? '';
const webhookUrl = process.env.FAKE_WEBHOOK_URL ?? '';
const webhookSecret = process.env.FAKE_WEBHOOK_SECRET ?? '';
const phoneNumberId = process.env.FAKE_PHONE_NUMBER_ID ?? 'phnum_bench';

const draw = ([min, max]: [number, number]) => min + Math.random() * (max - min);

/** What the fake saw since it started (one batch per process); `GET /stats` answers it. */
const stats = {
  calls: 0,
  active: 0,
  maxActive: 0,
  lostAnswers: 0,
  /** Of those, the creates that placed nothing. */
  lostNotPlaced: 0,
  /** Numbers with more than one call placed. */
  dialedTwice: 0,
  webhookFailures: 0,
  /** Per call: from its outbound request to its webhook being sent, the time it held a slot (ms). */
  slotMs: [] as number[],
  /**
   * Per dial, in the order the requests came: the time it held a slot at the provider (its call's, or until
   * its answer was dropped when it placed nothing). The batch's no-wait replay dials these in this order.
   */
  dialMs: [] as number[],
  /** Per dial that followed an ended call: from that call's webhook to this request (ms). */
  freedSlotWaitMs: [] as number[],
};
/** Ends not yet followed by a dial, oldest first: each new dial takes the oldest. */
const freedAt: number[] = [];
/** Calls placed per number, and each conversation with the dial id it was placed for. */
const placedTo = new Map<string, number>();
const conversations = new Map<string, { agentId: string; userId: string | null; startedS: number }>();

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function sendWebhook(conversationId: string, agentId: string, startedAt: number, durationS: number): Promise<void> {
  const body = JSON.stringify({
    type: 'post_call_transcription',
    event_timestamp: Math.floor(Date.now() / 1000),
    data: {
      agent_id: agentId,
      conversation_id: conversationId,
      status: 'done',
      transcript: [{ role: 'agent', message: 'Hello, this is a reminder of your appointment.', time_in_call_secs: 0 }],
      metadata: { start_time_unix_secs: Math.floor(startedAt / 1000), call_duration_secs: durationS },
      analysis: { call_successful: 'success', transcript_summary: 'The appointment was confirmed.' },
    },
  });
  const t = Math.floor(Date.now() / 1000);
  const signature = `t=${t},v0=${createHmac('sha256', webhookSecret).update(`${t}.${body}`).digest('hex')}`;
  const response = await fetch(webhookUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'elevenlabs-signature': signature },
    body,
  }).catch(() => null);
  if (!response?.ok) stats.webhookFailures += 1;
  await response?.arrayBuffer();
}

function outboundCall(req: http.IncomingMessage, res: http.ServerResponse, body: Record<string, unknown>, kind: string): void {
  const requestAt = performance.now();
  const draw01 = Math.random();
  const lost = draw01 < loseAnswerRate;
  // Every dial takes a freed slot, whether or not the call it asks for is placed.
  const dialedAt = freedAt.shift();
  if (dialedAt !== undefined) stats.freedSlotWaitMs.push(requestAt - dialedAt);
  const dial = stats.dialMs.push(0) - 1;
  if (lost && draw01 < loseAnswerRate / 2) {
    // The answer is lost and nothing was placed: no call, no webhook.
    stats.lostAnswers += 1;
    stats.lostNotPlaced += 1;
    setTimeout(() => {
      stats.dialMs[dial] = performance.now() - requestAt;
      req.socket.destroy();
    }, draw(answerMs));
    return;
  }
  stats.calls += 1;
  stats.active += 1;
  stats.maxActive = Math.max(stats.maxActive, stats.active);
  const to = String(body.to_number);
  placedTo.set(to, (placedTo.get(to) ?? 0) + 1);
  if (placedTo.get(to) === 2) stats.dialedTwice += 1;
  const conversationId = `conv_bench${String(stats.calls).padStart(8, '0')}`;
  const clientData = (body.conversation_initiation_client_data ?? {}) as { user_id?: unknown };
  conversations.set(conversationId, {
    agentId: String(body.agent_id),
    userId: typeof clientData.user_id === 'string' ? clientData.user_id : null,
    startedS: Math.floor(Date.now() / 1000),
  });
  setTimeout(() => {
    if (lost) {
      stats.lostAnswers += 1;
      req.socket.destroy();
    } else {
      const id = kind === 'twilio' ? { callSid: `CA${stats.calls}` } : { sip_call_id: `sip-${stats.calls}` };
      json(res, 200, { success: true, message: 'Success', conversation_id: conversationId, ...id });
    }
    const lengthMs = draw(callMs);
    setTimeout(() => {
      const endedAt = performance.now();
      stats.active -= 1;
      stats.slotMs.push(endedAt - requestAt);
      stats.dialMs[dial] = endedAt - requestAt;
      freedAt.push(endedAt);
      void sendWebhook(conversationId, String(body.agent_id), Date.now() - lengthMs, Math.round(lengthMs / 1000));
    }, lengthMs);
  }, draw(answerMs));
}

/** GET /v1/convai/conversations (by agent, user_id and start time) and GET /v1/convai/conversations/{id}. */
function conversationRoutes(res: http.ServerResponse, url: URL): boolean {
  if (url.pathname === '/v1/convai/conversations') {
    const userId = url.searchParams.get('user_id');
    const after = Number(url.searchParams.get('call_start_after_unix') ?? '0');
    const listed = [...conversations]
      .filter(([, c]) => (userId === null || c.userId === userId) && c.startedS >= after)
      .map(([id, c]) => ({ conversation_id: id, agent_id: c.agentId, status: 'in-progress', start_time_unix_secs: c.startedS }));
    json(res, 200, { conversations: listed, next_cursor: null, has_more: false });
    return true;
  }
  const match = /^\/v1\/convai\/conversations\/([^/]+)$/.exec(url.pathname);
  if (!match) return false;
  const conversation = conversations.get(decodeURIComponent(match[1]!));
  if (!conversation) json(res, 404, { detail: { status: 'conversation_not_found', message: 'Conversation not found' } });
  else
    json(res, 200, {
      conversation_id: match[1],
      agent_id: conversation.agentId,
      status: 'in-progress',
      user_id: conversation.userId,
      metadata: { start_time_unix_secs: conversation.startedS, call_duration_secs: 0 },
    });
  return true;
}

function route(req: http.IncomingMessage, res: http.ServerResponse, text: string) {
  const url = new URL(req.url ?? '/', 'http://fake');
  const path = url.pathname;
  if (path === '/healthz') return json(res, 200, { status: 'ok' });
  if (path === '/stats') return json(res, 200, stats);
  if (req.headers['xi-api-key'] !== apiKey) return json(res, 401, { detail: { code: 'invalid_api_key', message: 'Invalid API key' } });
  if (req.method === 'GET' && path === '/v1/convai/phone-numbers') {
    return json(res, 200, [
      { provider: 'twilio', phone_number_id: phoneNumberId, phone_number: '+14155550100', label: 'Bench', assigned_agent: null },
    ]);
  }
  if (req.method === 'GET' && conversationRoutes(res, url)) return;
  const kind = { '/v1/convai/twilio/outbound-call': 'twilio', '/v1/convai/sip-trunk/outbound-call': 'sip_trunk' }[path];
  if (req.method === 'POST' && kind) return outboundCall(req, res, JSON.parse(text) as Record<string, unknown>, kind);
  json(res, 404, { detail: 'Not Found' });
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => route(req, res, Buffer.concat(chunks).toString('utf8')));
});
// A dial may wait here up to 1.5 s; the default keep-alive (5 s) would close sockets the adapter reuses.
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), '127.0.0.1');
