/**
 * A recording sent on to a client as it arrives from the provider (the API's and the portal's route alike):
 * its type, no caching anywhere (it is personal data), no ranges (the provider's stream is read once from its
 * start), and a warning in the log when it stops before its end, so that a cut download leaves a trace.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RecordingStream } from '../providers/provider.interface.js';
import { extensionOf } from './call-content.service.js';

export function sendRecording(request: FastifyRequest, reply: FastifyReply, recording: RecordingStream, callId: string): FastifyReply {
  reply
    .header('content-type', recording.contentType)
    .header('cache-control', 'private, no-store')
    .header('accept-ranges', 'none')
    .header('content-disposition', `inline; filename="${callId}.${extensionOf(recording.contentType)}"`);
  if (recording.contentLength !== null) reply.header('content-length', recording.contentLength);
  let failure: string | null = null;
  recording.body.once('error', (error: Error) => {
    failure = (error as { code?: string }).code ?? error.name;
  });
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    const sent = reply.raw.socket?.bytesWritten;
    request.log.warn(
      { callId, sentBytes: sent ?? null, expectedBytes: recording.contentLength, cause: failure ?? 'the client went away' },
      'recording stream ended before its end',
    );
  });
  return reply.send(recording.body);
}
