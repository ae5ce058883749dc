/**
 * Batch creation from the portal's form, at most once per form, through the same createBatch as
 * POST /v1/batches. The form's one-time token serves twice:
 * - as the Idempotency-Key of the batch (scoped to the API key the batch is placed with and to this
 *   form's route): the batch row is stored with the key's completion, so a copy of the form sent while or
 *   after the first runs (a double click, a reload) waits for it and answers the same batch;
 * - as a claim in portal_form_tokens, kept as long as a session lives (longer than the 24 hours of an
 *   Idempotency-Key), so the same form sent again much later, or with another API key chosen, makes nothing.
 */
import { addMs, isoTimestamp } from '../lib/clock.js';
import { findActiveApiKey } from '../features/api-keys/api-keys.service.js';
import type { CreateBatchBody } from '../features/batches/batches.schemas.js';
import { createBatch, type BatchesDeps } from '../features/batches/batches.service.js';
import { claimFor, endHold } from '../features/idempotency/idempotency.service.js';
import { ApiError } from '../errors/api-error.js';
import { sessionMaxMs } from '../features/identity/sessions.service.js';
import * as formTokens from './portal-form-tokens.repository.js';

/** The scope of the form tokens within an API key's Idempotency-Keys (apart from those of POST /v1/batches). */
export const portalCreateBatchRoute = 'POST /developers/batches';

export type CreateBatchOnceResult =
  | { readonly kind: 'created'; readonly batchId: string }
  /** The form was sent before: `batchId` is what it made, or null when that is not known (yet). */
  | { readonly kind: 'already_sent'; readonly batchId: string | null }
  | { readonly kind: 'invalid'; readonly param: string; readonly message: string }
  | { readonly kind: 'agent_not_found' }
  | { readonly kind: 'api_key_not_found' };

export async function createBatchOnce(
  deps: BatchesDeps,
  input: { readonly accountId: string; readonly apiKeyId: string; readonly formToken: string; readonly body: CreateBatchBody },
): Promise<CreateBatchOnceResult> {
  const apiKey = await findActiveApiKey(deps.db, input.accountId, input.apiKeyId);
  if (!apiKey) return { kind: 'api_key_not_found' };
  const claimed = await claimFor(deps, { apiKeyId: apiKey.id, route: portalCreateBatchRoute, key: input.formToken }, input.body).catch(
    (error: unknown) => {
      // Held for another form's body, or still being created.
      if (error instanceof ApiError && error.code === 'idempotency_conflict') return null;
      throw error;
    },
  );
  if (claimed === null) return { kind: 'already_sent', batchId: null };
  if (claimed.kind === 'replay') return { kind: 'already_sent', batchId: (claimed.response.body as { id: string }).id };
  const { key } = claimed;
  let tokenClaimed = false;
  let created = false;
  try {
    const now = deps.clock.now();
    // A form cannot outlive the session that showed it, so older tokens can go.
    await formTokens.deleteFormTokensBefore(deps.db, isoTimestamp(addMs(now, -sessionMaxMs)));
    tokenClaimed = await formTokens.claimFormToken(deps.db, {
      token: input.formToken,
      account_id: input.accountId,
      api_key_id: null,
      created_at: isoTimestamp(now),
    });
    if (!tokenClaimed) return { kind: 'already_sent', batchId: null };
    const response = await createBatch(deps, apiKey, input.body, key);
    created = true;
    tokenClaimed = false;
    return { kind: 'created', batchId: (response.body as { id: string }).id };
  } catch (error) {
    if (error instanceof ApiError && error.code === 'agent_not_found') return { kind: 'agent_not_found' };
    if (error instanceof ApiError && error.code === 'invalid_request') {
      return { kind: 'invalid', param: error.param ?? '', message: error.message };
    }
    throw error;
  } finally {
    // Nothing was made: the same form may be sent again once corrected.
    if (tokenClaimed) await formTokens.releaseFormToken(deps.db, input.formToken);
    await endHold(key, created);
  }
}
