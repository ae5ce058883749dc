/**
 * Key creation from the portal's form, at most once per form. The form carries a random one-time token; the
 * first submission claims it and makes the key in the same transaction, so a copy of the form sent again
 * (a reload of the answer without JavaScript, a double click, the back button) makes no second key. The
 * token of the new key is still shown exactly once: on the answer to the first submission.
 */
import type { Db } from '../db/database.js';
import { addMs, isoTimestamp, type Clock } from '../lib/clock.js';
import { createApiKey, getApiKey, type ApiKeyView } from '../features/api-keys/api-keys.service.js';
import type { ApiKeyMode } from '../features/api-keys/api-keys.tables.js';
import * as repo from './portal-form-tokens.repository.js';
import { randomToken, sessionMaxMs, tokenPattern } from '../features/identity/sessions.service.js';

export const newFormToken = randomToken;

export function isFormToken(value: string): boolean {
  return tokenPattern.test(value);
}

export type CreateKeyOnceResult =
  | { readonly kind: 'created'; readonly key: ApiKeyView & { token: string } }
  /** The form was sent before; `key` is what it made (null if that key is gone or not of this account). */
  | { readonly kind: 'already_sent'; readonly key: ApiKeyView | null };

export async function createKeyOnce(
  db: Db,
  clock: Clock,
  input: { accountId: string; name: string; mode: ApiKeyMode; formToken: string },
): Promise<CreateKeyOnceResult> {
  const now = clock.now();
  const outcome = await db.transaction().execute(async (trx) => {
    // A form cannot outlive the session that showed it, so older tokens can go.
    await repo.deleteFormTokensBefore(trx, isoTimestamp(addMs(now, -sessionMaxMs)));
    const claimed = await repo.claimFormToken(trx, {
      token: input.formToken,
      account_id: input.accountId,
      api_key_id: null,
      created_at: isoTimestamp(now),
    });
    if (!claimed) return { kind: 'already_sent' as const };
    const key = await createApiKey(trx, clock, { accountId: input.accountId, name: input.name, mode: input.mode });
    await repo.setFormTokenKey(trx, input.formToken, key.id);
    return { kind: 'created' as const, key };
  });
  if (outcome.kind === 'created') return outcome;
  // Read after the transaction: on PostgreSQL a concurrent first submission has committed by now.
  const used = await repo.findFormToken(db, input.formToken);
  const key = used?.api_key_id && used.account_id === input.accountId ? await getApiKey(db, input.accountId, used.api_key_id) : null;
  return { kind: 'already_sent', key };
}
