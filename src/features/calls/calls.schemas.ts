/** The shapes of the calls API (spec 2.1, 2.2, 7). Request and response types come from these schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { pathIdMaxLength } from '../../lib/ids.js';
import { e164Pattern } from '../../lib/phone-numbers.js';
import { CallAnalysis } from '../events/call-analysis.schema.js';
import { IdempotencyHeaders } from '../idempotency/idempotency.schemas.js';

/** A refused `to` in words, instead of the bare pattern (the error handler uses a route's hints). */
export const createCallPatternHints = {
  to: `to must be a phone number in E.164 format, such as +14155550123 (pattern ${e164Pattern}).`,
};
/** Spec 8: metadata is at most 5 KB, counted as UTF-8 bytes of its JSON (5 KB = 5,120 bytes). */
export const metadataMaxBytes = 5 * 1024;
export const metadataKeyMaxLength = 64;

export type MetadataValue = string | number | boolean | null;

export const Metadata = Type.Unsafe<Record<string, MetadataValue>>({
  type: 'object',
  propertyNames: { maxLength: metadataKeyMaxLength },
  additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
  description: `Variables passed to the agent as dynamic_variables. Keys of at most ${metadataKeyMaxLength} characters; values string, number, boolean or null; at most ${metadataMaxBytes} bytes of JSON in all.`,
});

export const CreateCallBody = Type.Object(
  {
    agent_id: Type.String({ description: 'An agent of your account, agent_…' }),
    to: Type.String({ pattern: e164Pattern, description: 'Destination in E.164 format.' }),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);
export type CreateCallBody = Static<typeof CreateCallBody>;

export const CreateCallHeaders = IdempotencyHeaders;

/** As in Stripe: true for an object of live mode (a cg_live_ key's), false for test mode's. */
export const Livemode = Type.Boolean({ description: 'true when made in live mode (with a cg_live_ key), false in test mode' });

export const CallCreated = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  to: Type.String(),
  status: Type.Literal('initiated'),
  created_at: Type.String({ format: 'date-time' }),
  livemode: Livemode,
});
export type CallCreated = Static<typeof CallCreated>;

export const callStatuses = ['initiated', 'completed', 'failed'] as const;
export const CallStatus = Type.Union(callStatuses.map((status) => Type.Literal(status)));

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/** A call as `GET /v1/calls/{id}` shows it: the creation fields, then the outcome once it ended. */
export const Call = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  to: Type.String(),
  status: CallStatus,
  metadata: Nullable(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]))),
  created_at: Type.String(),
  // With the fields every call has, before those of its outcome: in the same place whatever the status.
  livemode: Livemode,
  duration_seconds: Type.Optional(Type.Integer()),
  transcript_summary: Type.Optional(Type.String()),
  started_at: Type.Optional(Type.String()),
  ended_at: Type.Optional(Type.String()),
  failure_reason: Type.Optional(Type.String()),
  failure_message: Type.Optional(Nullable(Type.String())),
  failed_at: Type.Optional(Type.String()),
  analysis: Type.Optional(CallAnalysis),
  // Only on a call placed by a batch (src/features/batches), so a single call keeps exactly its shape.
  batch_id: Type.Optional(Type.String()),
  reference: Type.Optional(Nullable(Type.String())),
  // Only on a call whose create answer was lost and which callgate then found at the provider (its dial's
  // history is on the portal's call page); every other call keeps its shape.
  found_after_lost_answer: Type.Optional(Type.Literal(true)),
  // Only on a call someone cancelled (POST /v1/calls/{id}/cancel): when its provider agreed to end it.
  cancel_requested_at: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'When its voice provider agreed to end the call (POST /v1/calls/{id}/cancel); absent when nobody cancelled it. The call then ends as usual: call.failed with failure_reason cancelled if nobody had answered, call.completed otherwise.',
    }),
  ),
});
export type Call = Static<typeof Call>;

export const TranscriptTurn = Type.Object({
  // An enum, not a union of literals: one list of values in the document and its generated clients.
  role: Type.Unsafe<'agent' | 'user'>({
    type: 'string',
    enum: ['agent', 'user'],
    description: 'Who spoke: the agent, or the person called',
  }),
  text: Type.String(),
  offset_seconds: Nullable(Type.Number({ description: 'Seconds from the start of the call, when the provider says.' })),
});

export const CallTranscript = Type.Object({
  call_id: Type.String(),
  turns: Type.Array(TranscriptTurn, {
    description:
      'The conversation in order; empty when the provider kept none, or once CALLGATE_TRANSCRIPT_RETENTION has passed. System and tool messages are left out.',
  }),
});
export type CallTranscript = Static<typeof CallTranscript>;

export const CallParams = Type.Object({ id: Type.String({ maxLength: pathIdMaxLength }) });

export const ListCallsQuery = Type.Object(
  {
    limit: ListLimitQuery,
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'A call id: the page starts after it' })),
    // An enum, not a union of literals: its validation error lists the allowed values.
    status: Type.Optional(Type.Unsafe<(typeof callStatuses)[number]>({ type: 'string', enum: [...callStatuses] })),
    agent_id: Type.Optional(Type.String({ maxLength: 200 })),
    // Checked by the service, which says what is wrong (a + sent unencoded reads as a space).
    to: Type.Optional(Type.String({ maxLength: 64, description: 'Only calls to this number (E.164, its + URL-encoded as %2B)' })),
    batch_id: Type.Optional(Type.String({ maxLength: 200, description: 'Only the calls this batch placed' })),
    reference: Type.Optional(
      Type.String({ maxLength: 255, description: "Only calls of batch recipients with this reference (the recipient's own id)" }),
    ),
    created_after: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO 8601 with a time zone: only calls created after it (exclusive)' }),
    ),
    created_before: Type.Optional(
      Type.String({ maxLength: 64, description: 'ISO 8601 with a time zone: only calls created before it (exclusive)' }),
    ),
  },
  { additionalProperties: false },
);
export type ListCallsQuery = Static<typeof ListCallsQuery>;

export const CallList = Type.Object({ data: Type.Array(Call), has_more: Type.Boolean() });
export type CallList = Static<typeof CallList>;
