/**
 * What the events of a call's end say: the `data` of `call.completed` and `call.failed`, made from the call's
 * row. The calls write them (through webhook-delivery's fan-out), so they are the calls' to shape; the
 * events room stores and serves the envelopes without knowing a call.
 */
import type { CallEventType } from '../events/event-types.js';
import type { CallAnalysis } from '../events/call-analysis.schema.js';
import { analysisOf } from './call-analysis.js';
import type { CallRow } from './calls.tables.js';

/** `data` of `call.completed` (spec 6). */
export interface CallCompletedData {
  id: string;
  agent_id: string;
  status: 'completed';
  duration_seconds: number;
  transcript_summary: string;
  started_at: string;
  ended_at: string;
  /** What the provider judged and collected, as known when the event was written ({successful: null, data: {}} when nothing yet). */
  analysis: CallAnalysis;
  /** After the spec's fields, so that a receiver matches the call to its own record without a read. */
  to: string;
  metadata: Metadata | null;
  /** Only on a call a batch placed (not in spec 6, which knows single calls only). */
  batch_id?: string;
  reference?: string | null;
}

/** The call's metadata, as sent with it. */
type Metadata = Record<string, string | number | boolean | null>;

/** `data` of `call.failed` (the spec leaves it open; see docs/webhooks.md). */
export interface CallFailedData {
  id: string;
  agent_id: string;
  status: 'failed';
  failure_reason: string;
  failure_message: string | null;
  failed_at: string;
  to: string;
  metadata: Metadata | null;
  batch_id?: string;
  reference?: string | null;
}

/**
 * After the spec's fields, every call's number and metadata (as sent), and a batch's call its batch and
 * recipient's reference: what a receiver needs to match the call to its own record without a read.
 */
function withBatch<T extends CallCompletedData | CallFailedData>(call: CallRow, data: Omit<T, 'to' | 'metadata'>): T {
  const matched = { ...data, to: call.to_number, metadata: call.metadata === null ? null : (JSON.parse(call.metadata) as Metadata) } as T;
  return call.batch_id === null ? matched : { ...matched, batch_id: call.batch_id, reference: call.reference };
}

export function callOutcomeEvent(call: CallRow): { type: CallEventType; data: CallCompletedData | CallFailedData } | null {
  if (call.status === 'completed') {
    return {
      type: 'call.completed',
      data: withBatch<CallCompletedData>(call, {
        id: call.id,
        agent_id: call.agent_id,
        status: 'completed',
        duration_seconds: call.duration_seconds ?? 0,
        transcript_summary: call.transcript_summary ?? '',
        started_at: call.started_at ?? call.created_at,
        ended_at: call.ended_at ?? call.updated_at,
        analysis: analysisOf(call),
      }),
    };
  }
  if (call.status === 'failed') {
    return {
      type: 'call.failed',
      data: withBatch<CallFailedData>(call, {
        id: call.id,
        agent_id: call.agent_id,
        status: 'failed',
        failure_reason: call.failure_reason ?? 'unknown',
        failure_message: call.failure_message,
        failed_at: call.failed_at ?? call.updated_at,
      }),
    };
  }
  return null;
}
