/**
 * The account's calls: a filtered, paged list and a page per call with what was said on it (the analysis,
 * the transcript, the recording streamed through the portal), its events and their deliveries.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../errors/api-error.js';
import { listAgents } from '../features/agents/agents.service.js';
import { openRecording } from '../features/calls/call-content.service.js';
import { sendRecording } from '../features/calls/recording-reply.js';
import { getCallWithMode, listCallsWithMode } from '../features/calls/calls.service.js';
import { cancelCall } from '../features/calls/call-cancel.service.js';
import { statusOf } from '../errors/catalogue.js';
import type { CallRow } from '../features/calls/calls.tables.js';
import type { RecordingStream } from '../features/providers/provider.interface.js';
import { frameUser, isPlainId, seeOther, sendErrorPage, sendNotFound, sendPage, sessionOf, type PortalDeps } from './portal-request.js';
import { CallsQuery, EmptyForm, IdParams, NoticeQuery } from './portal.schemas.js';
import { loadCallPage } from './portal.service.js';
import { callPage, callsPage, callStatuses, cancelCallPage } from './views/calls.view.js';
import { portalPath } from './views/components.js';
import { noticeFor } from './views/layout.view.js';

const pageSize = 25;

function callsUrl(filters: { status?: string | undefined; agentId?: string | undefined; startingAfter?: string }): string {
  const params = new URLSearchParams();
  if (filters.status) params.set('status', filters.status);
  if (filters.agentId) params.set('agent_id', filters.agentId);
  if (filters.startingAfter) params.set('starting_after', filters.startingAfter);
  const query = params.toString();
  return `/developers/calls${query ? `?${query}` : ''}`;
}

/**
 * Why a recording cannot be played, as a page (an audio element shows its own error; a download or an
 * opened link shows this), never the API's JSON. A provider that cannot serve it now is a 503 with Retry-After.
 */
function sendRecordingError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  switch (error.code) {
    case 'not_found':
      return sendNotFound(request, reply);
    case 'call_not_ended':
      return sendErrorPage(request, reply, 409, 'Call not ended', 'The call has not ended yet: its recording can be played once it has.');
    case 'recording_not_available':
      return sendErrorPage(
        request,
        reply,
        404,
        'No recording',
        'This call has no recording: its provider kept none (or no longer has it), or the retention period for call content has passed.',
      );
    case 'provider_unavailable': {
      const seconds = Math.max(1, Math.ceil(error.retryAfterSeconds ?? 5));
      reply.header('retry-after', String(seconds));
      return sendErrorPage(
        request,
        reply,
        503,
        'Recording unavailable',
        `The voice provider could not serve the recording just now. Try again in ${seconds} s.`,
      );
    }
    default:
      throw error;
  }
}

export const portalCallsRoutes: FastifyPluginAsyncTypebox<{ deps: PortalDeps }> = async (app, { deps }) => {
  app.get('/calls', { schema: { querystring: CallsQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const { status: statusParam, agent_id: agentParam, starting_after: after } = request.query;
    const status = callStatuses.find((candidate) => candidate === statusParam);
    const agentId = agentParam !== undefined && isPlainId(agentParam) ? agentParam : undefined;
    const startingAfter = after !== undefined && isPlainId(after) ? after : undefined;
    const filters = { status, agentId } satisfies { status?: CallRow['status'] | undefined; agentId?: string | undefined };
    const page = await listCallsWithMode(deps.db, session.accountId, {
      limit: pageSize,
      ...(status ? { status } : {}),
      ...(agentId ? { agentId } : {}),
      ...(startingAfter ? { startingAfter } : {}),
    });
    const calls = page?.data ?? [];
    const last = calls.at(-1);
    return sendPage(
      reply,
      200,
      callsPage({
        user: frameUser(session),
        calls,
        agents: await listAgents(deps.db, session.accountId),
        status,
        agentId,
        paged: startingAfter !== undefined,
        olderUrl: page?.has_more && last ? callsUrl({ ...filters, startingAfter: last.id }) : undefined,
        newestUrl: callsUrl(filters),
      }),
    );
  });

  app.get('/calls/:id', { schema: { params: IdParams, querystring: NoticeQuery } }, async (request, reply) => {
    const session = sessionOf(request);
    const data = await loadCallPage(deps.db, session.accountId, request.params.id);
    if (!data) return sendNotFound(request, reply);
    return sendPage(reply, 200, callPage({ user: frameUser(session), ...data, notice: noticeFor(request.query.notice) }));
  });

  // Cancelling: a page that asks first, then the API's cancel for the session's account (either mode).
  app.get('/calls/:id/cancel', { schema: { params: IdParams } }, async (request, reply) => {
    const session = sessionOf(request);
    const call = await getCallWithMode(deps.db, session.accountId, request.params.id);
    if (!call) return sendNotFound(request, reply);
    if (call.status !== 'initiated' || call.cancel_requested_at) return seeOther(reply, portalPath('calls', call.id));
    return sendPage(reply, 200, cancelCallPage(frameUser(session), call));
  });

  app.post('/calls/:id/cancel', { schema: { params: IdParams, body: EmptyForm } }, async (request, reply) => {
    const session = sessionOf(request);
    const call = await getCallWithMode(deps.db, session.accountId, request.params.id);
    if (!call) return sendNotFound(request, reply);
    try {
      await cancelCall({ db: deps.db, clock: deps.clock, ...deps.calls }, { accountId: session.accountId, mode: call.mode }, call.id);
      return seeOther(reply, `${portalPath('calls', call.id)}?notice=call_cancelling`);
    } catch (error) {
      // Refused (ended meanwhile, a provider that cannot, one that failed): the call's page, saying why.
      if (!(error instanceof ApiError) || error.code === 'not_found') throw error;
      const data = await loadCallPage(deps.db, session.accountId, call.id);
      if (!data) return sendNotFound(request, reply);
      if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(Math.ceil(error.retryAfterSeconds)));
      return sendPage(
        reply,
        statusOf(error.code),
        callPage({ user: frameUser(session), ...data, error: `${error.message} (${error.code})` }),
      );
    }
  });

  // The call page's player: the session's account (either mode) stands in for an API key.
  app.get('/calls/:id/recording', { schema: { params: IdParams }, exposeHeadRoute: false }, async (request, reply) => {
    const session = sessionOf(request);
    const { id } = request.params;
    let recording: RecordingStream;
    try {
      recording = await openRecording(deps.db, deps.calls.providers, { accountId: session.accountId }, id, request.log);
    } catch (error) {
      if (error instanceof ApiError) return sendRecordingError(request, reply, error);
      throw error;
    }
    return sendRecording(request, reply, recording, id);
  });
};
