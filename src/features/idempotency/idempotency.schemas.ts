/** The request header every creating POST declares (spec 4.1); its rules are checked by src/http/idempotency.plugin.ts. */
import { Type } from '@sinclair/typebox';

/** 1 to 255 characters from `!` to `~` (spec 4.1): a space or any byte above 0x7E is invalid. */
export const idempotencyKeyPattern = '^[!-~]{1,255}$';

export const IdempotencyHeaders = Type.Object({
  // The rule is stated here so the OpenAPI document shows it; a key that breaks it never reaches the schema's
  // own 400 invalid_request: the idempotency plugin checks the key first and answers invalid_idempotency_key.
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: idempotencyKeyPattern,
      description:
        'Idempotency-Key: 1 to 255 printable ASCII characters, one per logical request. A retry with the same key and body answers the first success again (Idempotent-Replayed: true) and creates nothing; the same key with another body is 409 idempotency_conflict. Keys are kept 24 hours.',
    }),
  ),
});
