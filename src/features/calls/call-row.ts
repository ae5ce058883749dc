/**
 * A call's row as it is first stored, apart from the modules that store it: the dial driver, for POST
 * /v1/calls and the batch dialer (dial-driver.ts), and the dial job that finds a call whose answer was lost
 * (dials.service), which import each other's functions otherwise.
 */
import { isoTimestamp } from '../../lib/clock.js';
import { callIdOf } from '../../lib/ids.js';
import type { CallRow } from './calls.tables.js';

/** The outcome columns of a call that has none yet: a new call, and the other kind's columns of an ending. */
export const noOutcome = {
  started_at: null,
  ended_at: null,
  duration_seconds: null,
  transcript_summary: null,
  failure_reason: null,
  failure_message: null,
  failed_at: null,
  analysis_successful: null,
  analysis_data: null,
} as const;

/** Whom a new call is for and what was asked: the columns a call shares with its dial, under the same names. */
export type NewCallOrigin = Pick<
  CallRow,
  'account_id' | 'api_key_id' | 'agent_id' | 'agent_ref' | 'mode' | 'provider' | 'to_number' | 'metadata' | 'batch_id' | 'reference'
>;

/**
 * The row of a call the provider placed, as it is first stored: with no outcome, looked at first at
 * `firstCheckAt`. Whether its answer came (the dial driver) or it was found after the answer was lost (the dial
 * job), it is the same row but for `created_at` and `found_after_lost_answer`.
 */
export function newCallRow(call: {
  readonly conversationId: string;
  readonly origin: NewCallOrigin;
  readonly dialId: string;
  readonly createdAt: string;
  readonly now: Date;
  readonly firstCheckAt: Date;
  readonly foundAfterLostAnswer: boolean;
  /** What the provider gave for ending the call later (PlacedCall.control); null when nothing. */
  readonly control?: string | null;
}): CallRow {
  const { origin } = call;
  return {
    id: callIdOf(call.conversationId),
    account_id: origin.account_id,
    api_key_id: origin.api_key_id,
    agent_id: origin.agent_id,
    agent_ref: origin.agent_ref,
    mode: origin.mode,
    provider: origin.provider,
    provider_conversation_id: call.conversationId,
    to_number: origin.to_number,
    metadata: origin.metadata,
    status: 'initiated',
    created_at: call.createdAt,
    updated_at: isoTimestamp(call.now),
    next_check_at: isoTimestamp(call.firstCheckAt),
    ...noOutcome,
    batch_id: origin.batch_id,
    reference: origin.reference,
    dial_id: call.dialId,
    found_after_lost_answer: call.foundAfterLostAnswer ? 1 : 0,
    cancel_requested_at: null,
    provider_control: call.control ?? null,
  };
}
