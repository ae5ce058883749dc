import { errorCatalogue, isRetryable, type ErrorCode } from './catalogue.js';

export interface ApiErrorOptions {
  /** The request field at fault, when exactly one is. */
  readonly param?: string;
  /** Seconds after which trying again can work; the HTTP edge sends it as `Retry-After`. */
  readonly retryAfterSeconds?: number;
  /** Whether the same request can succeed later, where the code's default (`isRetryable`) does not say it. */
  readonly retryable?: boolean;
  readonly cause?: unknown;
}

/**
 * The one type of an expected failure: a code from the catalogue, a message for people and the field at
 * fault. Services throw it without knowing who renders it: the HTTP edge maps the code to a status, the
 * portal to a page, the CLI to a line on stderr.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: ErrorCode;
  readonly param: string | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message?: string, options: ApiErrorOptions = {}) {
    super(message ?? errorCatalogue[code].message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.param = options.param;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.retryable = options.retryable ?? isRetryable(code);
  }
}
