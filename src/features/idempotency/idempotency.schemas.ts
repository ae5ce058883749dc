/** The request header every creating POST declares (spec 4.1); its rules are checked by idempotency.hook.ts. */
import { Type } from '@sinclair/typebox';

export const IdempotencyHeaders = Type.Object({
  // No length or pattern here: withIdempotency answers a malformed key with its own code, invalid_idempotency_key.
  'idempotency-key': Type.Optional(
    Type.String({
      description:
        'Idempotency-Key: 1 to 255 printable ASCII characters, one per logical request. A retry with the same key and body answers the first success again (Idempotent-Replayed: true) and creates nothing; the same key with another body is 409 idempotency_conflict. Keys are kept 24 hours.',
    }),
  ),
});
