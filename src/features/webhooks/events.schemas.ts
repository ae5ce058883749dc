/** The shapes of the events API (GET /v1/events): the envelopes webhooks carry, and the list's query. */
import { Type, type Static } from '@sinclair/typebox';
import { webhookEventTypes } from './events.service.js';

/** An event as its webhook's body: `data` is the call (call.*) or the batch (batch.completed). */
export const EventEnvelope = Type.Object({
  id: Type.String({ description: 'evt_…, also the webhook-id header of its deliveries' }),
  type: Type.Unsafe<(typeof webhookEventTypes)[number]>({ type: 'string', enum: [...webhookEventTypes] }),
  created_at: Type.String({ format: 'date-time' }),
  data: Type.Object({}, { additionalProperties: true }),
});

export const EventList = Type.Object({ data: Type.Array(EventEnvelope), has_more: Type.Boolean() });

export const EventParams = Type.Object({ id: Type.String({ maxLength: 200 }) });

export const ListEventsQuery = Type.Object(
  {
    // Checked by the route, which names the range in its message (a pattern error would show a regex).
    limit: Type.Optional(Type.String({ description: 'An integer from 1 to 100, default 20' })),
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'An event id: the page starts after it' })),
    // An enum: its validation error lists the types there are.
    type: Type.Optional(Type.Unsafe<(typeof webhookEventTypes)[number]>({ type: 'string', enum: [...webhookEventTypes] })),
    created_after: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 with a time zone: only events created after it' })),
  },
  { additionalProperties: false },
);
export type ListEventsQuery = Static<typeof ListEventsQuery>;
