/**
 * Every failure the client throws is a CallgateError with the same four fields, whatever went wrong: an
 * answer of the API (its catalogue `code`, spec 7), the network, a timeout, or a webhook that did not verify.
 * Subclasses only sort them for `instanceof`; `status` and `code` carry the detail.
 */

export interface CallgateErrorFields {
  /** The HTTP status of the answer; null when none came (network error, timeout, webhook verification). */
  readonly status: number | null;
  /** The API's stable error code (`invalid_request`, `rate_limit_exceeded`, …) or the client's own. */
  readonly code: string;
  readonly message: string;
  /** The request id (`req_…`) to quote to the operator; null when the server did not answer. */
  readonly request_id: string | null;
  /** The request field at fault, when the API names exactly one. */
  readonly param?: string | undefined;
  /** Seconds the server asked to wait before trying again (`Retry-After`), when it did. */
  readonly retry_after_seconds?: number | undefined;
  /** The Idempotency-Key the request carried, so a caller can retry the same logical create later. */
  readonly idempotency_key?: string | undefined;
  /**
   * Whether the same request can succeed if sent again, as the API's answer says (`retryable`); undefined
   * when no answer said (the network, a timeout, a body that is not callgate's).
   */
  readonly retryable?: boolean | undefined;
  readonly cause?: unknown;
}

export class CallgateError extends Error {
  override readonly name: string = 'CallgateError';
  readonly status: number | null;
  readonly code: string;
  readonly request_id: string | null;
  readonly param: string | undefined;
  readonly retry_after_seconds: number | undefined;
  readonly idempotency_key: string | undefined;
  readonly retryable: boolean | undefined;

  constructor(fields: CallgateErrorFields) {
    super(fields.message, fields.cause === undefined ? undefined : { cause: fields.cause });
    this.status = fields.status;
    this.code = fields.code;
    this.request_id = fields.request_id;
    this.param = fields.param;
    this.retry_after_seconds = fields.retry_after_seconds;
    this.idempotency_key = fields.idempotency_key;
    this.retryable = fields.retryable;
  }
}

/** 400, 413, 415 and other refusals of the request itself: fix it, do not retry. */
export class InvalidRequestError extends CallgateError {
  override readonly name = 'InvalidRequestError';
}
/** 401: missing, invalid or revoked API key. */
export class AuthenticationError extends CallgateError {
  override readonly name = 'AuthenticationError';
}
/** 403: an agent not of the account, a suppressed number. */
export class PermissionError extends CallgateError {
  override readonly name = 'PermissionError';
}
/** 404. */
export class NotFoundError extends CallgateError {
  override readonly name = 'NotFoundError';
}
/** 409: an Idempotency-Key reused with another body (or still in progress), a batch that cannot change. */
export class ConflictError extends CallgateError {
  override readonly name = 'ConflictError';
}
/** 429 after the retries ran out: rate_limit_exceeded or concurrency_limit_exceeded. */
export class RateLimitError extends CallgateError {
  override readonly name = 'RateLimitError';
}
/** 5xx after the retries ran out. */
export class ServerError extends CallgateError {
  override readonly name = 'ServerError';
}
/** No answer: the connection failed or broke (`code` connection_error) or the attempt timed out (`timeout`). */
export class ConnectionError extends CallgateError {
  override readonly name = 'ConnectionError';
}
/** The caller's AbortSignal stopped the request (`code` aborted); never retried. */
export class AbortedError extends CallgateError {
  override readonly name = 'AbortedError';
}
/** A webhook whose signature, timestamp or headers do not verify (`code` webhook_verification_failed). */
export class WebhookVerificationError extends CallgateError {
  override readonly name = 'WebhookVerificationError';
}

/** The subclass for an HTTP status of an error answer. */
export function errorClassFor(status: number): typeof CallgateError {
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return ServerError;
  return InvalidRequestError;
}
