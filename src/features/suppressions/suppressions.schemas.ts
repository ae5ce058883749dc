/** The shapes of the suppressions API. Request and response types come from these schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { e164Pattern } from '../../lib/phone-numbers.js';
import { IdempotencyHeaders } from '../idempotency/idempotency.schemas.js';

export const reasonMaxLength = 500;

export const CreateSuppressionBody = Type.Object(
  {
    // The very rule of POST /v1/calls' `to` (and its wording, through the route's pattern hints).
    to: Type.String({ pattern: e164Pattern, description: 'The number never to call, in E.164 format.' }),
    reason: Type.Optional(Type.String({ minLength: 1, maxLength: reasonMaxLength, description: 'Why, for the people of the account.' })),
  },
  { additionalProperties: false },
);
export type CreateSuppressionBody = Static<typeof CreateSuppressionBody>;

export const CreateSuppressionHeaders = IdempotencyHeaders;

export const Suppression = Type.Object({
  id: Type.String(),
  to: Type.String(),
  reason: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String(),
});
export type Suppression = Static<typeof Suppression>;

/** The number in the path, URL-encoded (`/v1/suppressions/%2B14155550123`); checked by the route. */
export const SuppressionParams = Type.Object({ to: Type.String({ maxLength: 64 }) });

export const ListSuppressionsQuery = Type.Object(
  {
    limit: ListLimitQuery,
    starting_after: Type.Optional(Type.String({ maxLength: 200, description: 'An entry id (sup_…): the page starts after it' })),
  },
  { additionalProperties: false },
);
export type ListSuppressionsQuery = Static<typeof ListSuppressionsQuery>;

export const SuppressionList = Type.Object({ data: Type.Array(Suppression), has_more: Type.Boolean() });
export type SuppressionList = Static<typeof SuppressionList>;
