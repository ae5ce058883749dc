/**
 * The shapes of events: the envelopes webhooks carry (docs/webhooks.md), which GET /v1/events answers too,
 * and the list's query. The OpenAPI document (src/features/openapi) shows them in its `webhooks` section.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { pathIdMaxLength } from '../../lib/ids.js';
import { Batch } from '../batches/batches.schemas.js';
import { CallAnalysis } from './call-analysis.schema.js';
import { webhookEventTypes } from './event-types.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * After the spec's fields, what a receiver needs to match the call to its own record without a read: every
 * call's number and metadata; `batch_id` and `reference` only on a call placed by a batch (spec 6 knows
 * single calls only).
 */
const matchFields = {
  to: Type.String({ description: 'The number called, E.164' }),
  metadata: Nullable(
    Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]), {
      description: 'The metadata sent with the call (null when none)',
    }),
  ),
  batch_id: Type.Optional(Type.String({ description: 'batch_…: the batch that placed the call' })),
  reference: Type.Optional(Nullable(Type.String({ description: "The recipient's reference" }))),
};

/** `data` of `call.completed` (spec 6). */
export const CallCompletedData = Type.Object({
  id: Type.String({ description: 'The call id, as returned by POST /v1/calls' }),
  agent_id: Type.String(),
  status: Type.Literal('completed'),
  duration_seconds: Type.Integer({ minimum: 0, description: 'Length of the conversation in seconds' }),
  transcript_summary: Type.String({ description: 'Short summary of the conversation (may be empty)' }),
  started_at: Type.String({ format: 'date-time' }),
  ended_at: Type.String({ format: 'date-time' }),
  analysis: CallAnalysis,
  ...matchFields,
});

/** `data` of `call.failed`. */
export const CallFailedData = Type.Object({
  id: Type.String({ description: 'The call id, as returned by POST /v1/calls' }),
  agent_id: Type.String(),
  status: Type.Literal('failed'),
  failure_reason: Type.String({
    description: 'busy, no_answer, voicemail, rejected, provider_error, timeout or unknown; treat a value you do not know as unknown',
  }),
  failure_message: Nullable(Type.String({ description: 'For logs and people, not for code' })),
  failed_at: Type.String({ format: 'date-time' }),
  ...matchFields,
});

/** `data` of `webhook.test`: sent to one endpoint on request (never listed by GET /v1/events). */
export const WebhookTestData = Type.Object({ endpoint_id: Type.String(), message: Type.String() });

const envelope = <T extends string, D extends TSchema>(type: T, data: D, description: string) =>
  Type.Object(
    {
      id: Type.String({ description: 'evt_…, also the webhook-id header of its deliveries' }),
      type: Type.Literal(type),
      created_at: Type.String({ format: 'date-time' }),
      livemode: Type.Boolean({
        description:
          "true for a live-mode event, false for a test-mode one (a test-mode key's calls and batches); an endpoint receives only its own mode's events",
      }),
      data,
    },
    { description },
  );

export const CallCompletedEvent = envelope('call.completed', CallCompletedData, 'The call took place and has ended.');
export const CallFailedEvent = envelope('call.failed', CallFailedData, 'The call could not take place, or the provider reports it failed.');
export const BatchCompletedEvent = envelope(
  'batch.completed',
  Batch,
  'Every recipient of the batch has ended; data is the batch as GET /v1/batches/{id} shows it (status completed or cancelled).',
);
export const WebhookTestEvent = envelope('webhook.test', WebhookTestData, 'A test event, requested for one endpoint.');

/** The envelopes by type, for the document's `webhooks` section. */
export const eventSchemas = {
  'call.completed': CallCompletedEvent,
  'call.failed': CallFailedEvent,
  'batch.completed': BatchCompletedEvent,
  'webhook.test': WebhookTestEvent,
} as const satisfies Record<(typeof webhookEventTypes)[number] | 'webhook.test', TSchema>;

/** An event as GET /v1/events answers it: the envelope of one of the types an endpoint may subscribe to. */
export const EventEnvelope = Type.Union([CallCompletedEvent, CallFailedEvent, BatchCompletedEvent]);

export const EventList = Type.Object({ data: Type.Array(EventEnvelope), has_more: Type.Boolean() });

export const EventParams = Type.Object({ id: Type.String({ maxLength: pathIdMaxLength }) });

export const ListEventsQuery = Type.Object(
  {
    limit: ListLimitQuery,
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'An event id: the page starts after it' })),
    // An enum: its validation error lists the types there are.
    type: Type.Optional(Type.Unsafe<(typeof webhookEventTypes)[number]>({ type: 'string', enum: [...webhookEventTypes] })),
    created_after: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 with a time zone: only events created after it' })),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;
