/** The shapes of the batches API. Request and response types come from these schemas. */
import { Type, type Static } from '@sinclair/typebox';
import { ListLimitQuery } from '../../http/list-limit.js';
import { pathIdMaxLength } from '../../lib/ids.js';
import type { PatternHints } from '../../errors/validation-messages.js';
import { e164Pattern } from '../../lib/phone-numbers.js';
import { Livemode, Metadata } from '../calls/calls.schemas.js';
import { weekdays } from './calling-window.js';
import { batchStatuses, recipientStatuses } from './batches.tables.js';
import { IdempotencyHeaders } from '../idempotency/idempotency.schemas.js';

export const recipientsMax = 10_000;
export const referenceMaxLength = 255;
export const nameMaxLength = 200;
export const maxConcurrencyLimit = 1_000;
export const maxConcurrencyDefault = 5;
/**
 * Call failures a batch may retry: the line was busy, nobody answered, or an answering machine took the call
 * (not a refusal, not an unknown end).
 */
export const retryReasons = ['busy', 'no_answer', 'voicemail'] as const;
export type RetryReason = (typeof retryReasons)[number];
export const maxAttemptsLimit = 5;
/** `on` by default: busy and no answer, as before voicemail could be told apart. */
export const retryDefaults = { on: ['busy', 'no_answer'] as RetryReason[], max_attempts: 1, delay_minutes: 30 };
export const retryDelayMinutesLimit = 1_440;
/** Bodies of POST /v1/batches may be this large (10,000 recipients with metadata); 64 KB elsewhere. */
export const batchBodyLimitBytes = 10 * 1024 * 1024;

/** The wording of a pattern failure, with the recipient's place: `recipients[17].to`. */
export const createBatchPatternHints: PatternHints = {
  'recipients[].to': (param) => `${param} must be a phone number in E.164 format, such as +14155550123 (pattern ${e164Pattern}).`,
};

export const RecipientInput = Type.Object(
  {
    to: Type.String({ pattern: e164Pattern, description: 'Destination in E.164 format; at most once in a batch.' }),
    metadata: Type.Optional(Metadata),
    reference: Type.Optional(Type.String({ minLength: 1, maxLength: referenceMaxLength, description: 'Your own id for this recipient.' })),
  },
  { additionalProperties: false },
);

const enumOf = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });

// Times and zones are checked by calling-window.ts, which says what is wrong with them (a pattern would not).
export const CallingWindowInput = Type.Object(
  {
    start: Type.String({ maxLength: 16, description: 'HH:MM, local time of the zone' }),
    end: Type.String({ maxLength: 16, description: 'HH:MM, after start (no window across midnight)' }),
    days: Type.Optional(Type.Array(enumOf(weekdays), { minItems: 1, maxItems: weekdays.length, description: 'Default: every day' })),
    time_zone: Type.String({
      maxLength: 100,
      description:
        'An IANA time zone such as America/New_York (in any case; echoed as the tz database writes it), or "recipient": the zones of each number',
    }),
    fallback_time_zone: Type.Optional(Type.String({ maxLength: 100, description: 'With "recipient": for numbers of no known zone' })),
  },
  { additionalProperties: false },
);
export type CallingWindowInput = Static<typeof CallingWindowInput>;

export const RetryInput = Type.Object(
  {
    on: Type.Optional(
      Type.Array(enumOf(retryReasons), {
        minItems: 1,
        maxItems: retryReasons.length,
        description: 'busy, no_answer and/or voicemail; default busy and no_answer',
      }),
    ),
    max_attempts: Type.Optional(
      Type.Integer({ minimum: 1, maximum: maxAttemptsLimit, description: 'Dials per recipient in all; default 1' }),
    ),
    delay_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: retryDelayMinutesLimit, description: 'Default 30' })),
  },
  { additionalProperties: false },
);
export type RetryInput = Static<typeof RetryInput>;

export const CreateBatchBody = Type.Object(
  {
    agent_id: Type.String({ description: 'An agent of your account, agent_…' }),
    recipients: Type.Array(RecipientInput, { minItems: 1, maxItems: recipientsMax }),
    // "" is refused as an empty reference is: a client that means no name leaves the field out.
    name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: nameMaxLength,
        description: `Your label for the batch, 1 to ${nameMaxLength} characters; leave it out for none ("" is refused)`,
      }),
    ),
    // Checked by the service, which says what is wrong with the time (a format error would not).
    scheduled_at: Type.Optional(Type.String({ maxLength: 64, description: 'ISO 8601 with a time zone; default now' })),
    max_concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: maxConcurrencyLimit })),
    calling_window: Type.Optional(CallingWindowInput),
    retry: Type.Optional(RetryInput),
  },
  { additionalProperties: false },
);
export type CreateBatchBody = Static<typeof CreateBatchBody>;

export const CreateBatchHeaders = IdempotencyHeaders;

const count = Type.Integer({ minimum: 0 });

export const BatchCounts = Type.Object({
  total: count,
  queued: count,
  dialing: count,
  in_progress: count,
  completed: count,
  failed: count,
  cancelled: count,
});
export type BatchCounts = Static<typeof BatchCounts>;

export const Batch = Type.Object({
  id: Type.String(),
  agent_id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  status: enumOf(batchStatuses),
  scheduled_at: Type.String(),
  max_concurrency: Type.Integer(),
  counts: BatchCounts,
  /** As given, `days` filled in; null without a window. */
  calling_window: Type.Union([
    Type.Object({
      start: Type.String(),
      end: Type.String(),
      days: Type.Array(enumOf(weekdays)),
      time_zone: Type.String(),
      fallback_time_zone: Type.Optional(Type.String()),
    }),
    Type.Null(),
  ]),
  /** With its defaults filled in; null without retries. */
  retry: Type.Union([
    Type.Object({ on: Type.Array(enumOf(retryReasons)), max_attempts: Type.Integer(), delay_minutes: Type.Integer() }),
    Type.Null(),
  ]),
  created_at: Type.String(),
  completed_at: Type.Union([Type.String(), Type.Null()]),
  livemode: Livemode,
});
export type Batch = Static<typeof Batch>;

export const Recipient = Type.Object({
  id: Type.String(),
  to: Type.String(),
  reference: Type.Union([Type.String(), Type.Null()]),
  metadata: Type.Union([Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])), Type.Null()]),
  status: enumOf(recipientStatuses),
  /** The call of its latest attempt, once placed. */
  call_id: Type.Optional(Type.String()),
  /** Every call placed for it, oldest first (one an attempt that reached the provider). */
  call_ids: Type.Array(Type.String()),
  /** Dials made (or under way). */
  attempts: Type.Integer({ minimum: 0 }),
  // Why a recipient waits with attempts behind it: without these a queued retry looked like a new recipient.
  last_failure_reason: Type.Union([Type.String(), Type.Null()], {
    description:
      "Why its latest call failed (a call's failure_reason, such as busy): set while it waits for a retry, and once it failed for good; null when no call of it failed, or its latest completed",
  }),
  last_failure_message: Type.Union([Type.String(), Type.Null()], {
    description: 'The words that came with last_failure_reason, for logs and people; null when there were none',
  }),
  next_attempt_at: Type.Union([Type.String(), Type.Null()], {
    description:
      "While queued: not dialed before this time (its batch's start, the opening of its calling window, a retry's delay); null otherwise",
  }),
  failure_reason: Type.Optional(Type.String({ description: 'Once failed for good: why (the same as last_failure_reason)' })),
  failure_message: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  updated_at: Type.String(),
  /** Its batch's. */
  livemode: Livemode,
});
export type Recipient = Static<typeof Recipient>;

export const BatchParams = Type.Object({ id: Type.String({ maxLength: pathIdMaxLength }) });

const listQuery = <T extends string>(statuses: readonly T[], cursorOf: string) =>
  Type.Object(
    {
      limit: ListLimitQuery,
      starting_after: Type.Optional(Type.String({ maxLength: 200, description: `A ${cursorOf} id: the page starts after it` })),
      // An enum: its validation error lists the allowed values.
      status: Type.Optional(enumOf(statuses)),
    },
    { additionalProperties: false },
  );

export const ListBatchesQuery = listQuery(batchStatuses, 'batch');
export type ListBatchesQuery = Static<typeof ListBatchesQuery>;
export const ListRecipientsQuery = listQuery(recipientStatuses, 'recipient');
export type ListRecipientsQuery = Static<typeof ListRecipientsQuery>;

export const BatchList = Type.Object({ data: Type.Array(Batch), has_more: Type.Boolean() });
export type BatchList = Static<typeof BatchList>;
export const RecipientList = Type.Object({ data: Type.Array(Recipient), has_more: Type.Boolean() });
export type RecipientList = Static<typeof RecipientList>;
