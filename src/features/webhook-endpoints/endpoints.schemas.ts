/** The shapes of the webhook endpoints API (/v1/webhook_endpoints). Request and response types come from these schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { pathIdMaxLength } from '../../lib/ids.js';
import { webhookEventTypes } from '../events/event-types.js';
import { IdempotencyHeaders } from '../idempotency/idempotency.schemas.js';

/** Endpoints one account may have in one mode (disabled ones count; deleted ones do not). */
export const endpointsPerModeMax = 50;
/** The longest URL an endpoint takes. */
export const endpointUrlMaxLength = 2048;

const eventsDescription = `Event types to receive (${webhookEventTypes.join(', ')}), or ["*"] for all of them, those added later too`;

// Strings, not an enum: the service names the unknown ones and lists the known ones (param enabled_events).
const EnabledEvents = Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 50, description: eventsDescription });
const Url = Type.String({
  minLength: 1,
  maxLength: endpointUrlMaxLength,
  description: 'Where the events are POSTed: https, on a public address (http and private addresses only where the operator allows them)',
});
const Description = Type.String({ maxLength: 500, description: 'Your note, at most 500 characters' });

export const CreateWebhookEndpointBody = Type.Object(
  {
    url: Url,
    enabled_events: Type.Optional({ ...EnabledEvents, description: `${eventsDescription}; default ["*"]` }),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);
export type CreateWebhookEndpointBody = Static<typeof CreateWebhookEndpointBody>;

export const CreateWebhookEndpointHeaders = IdempotencyHeaders;

export const UpdateWebhookEndpointBody = Type.Object(
  {
    url: Type.Optional(Url),
    enabled_events: Type.Optional(EnabledEvents),
    description: Type.Optional(Description),
    disabled: Type.Optional(
      Type.Boolean({
        description:
          'true stops deliveries (pending ones end as failed); false enables it again, also after a 410 or 5 days of failures, its failure count afresh',
      }),
    ),
  },
  // At least one field: the service says so in words (minProperties would answer in a validator's).
  { additionalProperties: false, description: 'At least one field' },
);
export type UpdateWebhookEndpointBody = Static<typeof UpdateWebhookEndpointBody>;

const endpointFields = {
  id: Type.String({ description: 'we_…' }),
  url: Type.String(),
  enabled_events: Type.Array(Type.String(), { description: 'The event types it receives; ["*"] for all' }),
  description: Type.String(),
  livemode: Type.Boolean({
    description: 'true for a live endpoint (live-mode events), false for a test one: the mode of the key that made it',
  }),
  status: Type.Unsafe<'enabled' | 'disabled'>({ type: 'string', enum: ['enabled', 'disabled'] }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], {
    description: 'Why it is disabled (by a PATCH, a 410 Gone answer, or 5 days of failed deliveries); null while enabled',
  }),
  created_at: Type.String(),
};

export const WebhookEndpoint = Type.Object(endpointFields);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

/** The endpoint with its signing secret: the answer of a creation and of a rotation, and of no other request. */
export const WebhookEndpointWithSecret = Type.Object({
  ...endpointFields,
  secret: Type.String({
    description: 'whsec_…: verify the webhook-signature of its deliveries with it. Shown in this answer only: store it now',
  }),
});
export type WebhookEndpointWithSecret = Static<typeof WebhookEndpointWithSecret>;

export const WebhookEndpointList = Type.Object({ data: Type.Array(WebhookEndpoint), has_more: Type.Boolean() });
export type WebhookEndpointList = Static<typeof WebhookEndpointList>;

export const WebhookEndpointParams = Type.Object({ id: Type.String({ maxLength: pathIdMaxLength }) });

export const ListWebhookEndpointsQuery = Type.Object(
  {
    limit: ListLimitQuery,
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'An endpoint id (we_…): the page starts after it' })),
    url: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: endpointUrlMaxLength,
        description: 'Only endpoints of exactly this URL (as the endpoint shows it); leave it out for every endpoint',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ListWebhookEndpointsQuery = Static<typeof ListWebhookEndpointsQuery>;
