/**
 * Every public error code with its HTTP status and default message. Codes are part of the API contract
 * (spec 7 and 9: they never change), so this map is the one source; the README's error table is checked
 * against it by a test.
 */
export const errorCatalogue = {
  invalid_request: { status: 400, message: 'The request body is invalid.' },
  invalid_json: {
    status: 400,
    message: 'The request body is not valid JSON. Send one JSON object, with Content-Type: application/json.',
  },
  invalid_idempotency_key: {
    status: 400,
    message: 'The Idempotency-Key header must be 1 to 255 printable ASCII characters (! to ~).',
  },
  unauthorized: {
    status: 401,
    message:
      'Missing, malformed, invalid or revoked API key. Send it as "Authorization: Bearer cg_…"; an operator creates one with `npx callgate keys create` or in the portal (API keys).',
  },
  agent_not_found: { status: 403, message: "The agent does not exist in this API key's account." },
  number_suppressed: {
    status: 403,
    message:
      "The number is on this account's suppression list, so it is not called. Do not retry; if the person asked to be called again, remove the number (DELETE /v1/suppressions/{to}) first.",
  },
  not_found: { status: 404, message: 'No such resource.' },
  recording_not_available: {
    status: 404,
    message:
      'The call has no recording: its provider kept none, or it was deleted after the retention period. Its transcript may still be read.',
  },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path.' },
  request_timeout: {
    status: 408,
    message: 'The request did not arrive in time: its headers or body came too slowly. Send the whole request again without pauses.',
  },
  idempotency_conflict: {
    status: 409,
    message:
      'This Idempotency-Key was already used with a different request body. Send the same body to get its answer, or use a new key for a new request.',
  },
  call_not_ended: {
    status: 409,
    message: 'The call has not ended yet. Wait for its call.completed or call.failed event, then read it again.',
  },
  call_already_ended: {
    status: 409,
    message: 'The call has already ended, so it cannot be cancelled. Read its outcome with GET /v1/calls/{id}.',
  },
  cancel_not_supported: {
    status: 409,
    message:
      "The call's voice provider offers no way to end a call through its API, so callgate cannot cancel it; it ends when the conversation does.",
  },
  batch_not_resumable: { status: 409, message: 'Only a paused batch can be resumed; a completed or cancelled batch cannot.' },
  batch_finished: { status: 409, message: 'The batch has ended (completed or cancelled); it can no longer be paused or cancelled.' },
  payload_too_large: { status: 413, message: 'The request body is larger than 64 KB.' },
  unsupported_media_type: { status: 415, message: 'Content-Type must be application/json.' },
  expectation_failed: { status: 417, message: 'The Expect header can only be 100-continue. Send the request again without it.' },
  headers_too_large: { status: 431, message: 'The request headers are larger than the server accepts (16 KB).' },
  rate_limit_exceeded: { status: 429, message: 'Too many requests. Retry after the number of seconds in Retry-After.' },
  concurrency_limit_exceeded: {
    status: 429,
    message:
      'The account has as many calls in progress as its limit allows (max_concurrent_calls). Retry after the number of seconds in Retry-After, with the same Idempotency-Key, once one of its calls has ended.',
  },
  internal_error: { status: 500, message: 'Something went wrong on our side. Quote the request_id to support.' },
  provider_error: { status: 502, message: 'The voice provider refused the call.' },
  provider_unavailable: {
    status: 503,
    message: 'The voice provider is unavailable. Retry with backoff and the same Idempotency-Key.',
  },
  database_unavailable: {
    status: 503,
    message:
      'The database is unavailable for a moment. Retry with backoff; for POST /v1/calls use the same Idempotency-Key, so no call is placed twice.',
  },
  service_unavailable: {
    status: 503,
    message:
      'This server is shutting down. Retry the request with backoff (with the same Idempotency-Key); another instance, or this one once restarted, will answer.',
  },
  idempotency_in_progress: {
    status: 503,
    message:
      'A request with this Idempotency-Key is still in progress. Retry after the number of seconds in Retry-After, with the same key, to get its result.',
  },
  provider_timeout: {
    status: 504,
    message:
      'The voice provider did not answer in time, so the call may or may not have been placed. callgate is checking with the provider and keeps the Idempotency-Key held meanwhile: retry after the number of seconds in Retry-After with the same key to get the call (never a second one).',
  },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

export function statusOf(code: ErrorCode): number {
  return errorCatalogue[code].status;
}

/**
 * Whether sending the same request again can succeed (after Retry-After where one is sent): too many requests,
 * a request that came too slowly, and every 5xx but `provider_error`, a definite refusal by the voice provider
 * (retrying it only spends the key's rate limit). Every error body says it as `retryable`, so a client need
 * not know the codes; one that reads nothing else may still retry every 5xx, and an Idempotency-Key keeps
 * that safe.
 */
export function isRetryable(code: ErrorCode): boolean {
  const status = statusOf(code);
  if (code === 'provider_error') return false;
  return status === 408 || status === 429 || status >= 500;
}
